// Element-wise sum of two or more inputs of the same shape (residual connections).
// srcs[i] (mb, ...) -> dst (mb, ...); each diff_src is a copy of diff_dst.
#pragma once

#include "nn/layer.h"

namespace ts {

class Add : public Layer {
 public:
  explicit Add(std::string name) : Layer(std::move(name)) {}
  std::string kind() const override { return "add"; }
  Shape setup(const std::vector<Shape>& src_shapes) override;
  void forward(Backend& backend, const std::vector<const float*>& srcs, float* dst,
               Mode mode) override;
  void backward(Backend& backend, const std::vector<const float*>& srcs, const float* dst,
                const float* diff_dst, const std::vector<float*>& diff_srcs) override;
  LayerInfo info() const override;
  bool fuse_relu() override;  // two inputs only: dst = relu(a + b)

 private:
  bool relu_ = false;
};

}  // namespace ts
