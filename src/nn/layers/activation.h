// Element-wise activation layers (ReLU, sigmoid) over the whole tensor.
// src (mb, ...) -> dst (mb, ...) of the same shape.
#pragma once

#include <memory>

#include "nn/layer.h"

namespace ts {

class Activation : public Layer {
 public:
  Activation(std::string name, EltwiseKind kind);
  std::string kind() const override;
  Shape setup(const std::vector<Shape>& src_shapes) override;
  TensorDesc plan(Backend& backend, int64_t mb, const std::vector<TensorDesc>& srcs) override;
  void forward(Backend& backend, const std::vector<Tensor>& srcs, const Tensor& dst,
               Mode mode) override;
  void backward(Backend& backend, const std::vector<Tensor>& srcs, const Tensor& dst,
                const Tensor& diff_dst, const std::vector<Tensor>& diff_srcs) override;
  LayerInfo info() const override;

 private:
  EltwiseDesc desc_;
  std::unique_ptr<EltwiseOp> op_;  // planned per minibatch
};

}  // namespace ts
