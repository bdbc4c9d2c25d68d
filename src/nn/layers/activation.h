// Element-wise activation layers (ReLU, sigmoid) over the whole tensor.
// src (mb, ...) -> dst (mb, ...) of the same shape.
#pragma once

#include "nn/layer.h"

namespace ts {

class Activation : public Layer {
 public:
  Activation(std::string name, EltwiseKind kind);
  std::string kind() const override;
  Shape setup(const std::vector<Shape>& src_shapes) override;
  void set_batch(int64_t mb) override;
  void forward(Backend& backend, const std::vector<const float*>& srcs, float* dst,
               Mode mode) override;
  void backward(Backend& backend, const std::vector<const float*>& srcs, const float* dst,
                const float* diff_dst, const std::vector<float*>& diff_srcs) override;
  LayerInfo info() const override;

 private:
  EltwiseDesc desc_;
};

}  // namespace ts
