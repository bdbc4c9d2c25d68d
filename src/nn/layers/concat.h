// Channel concatenation: srcs[i] (mb, c_i, h, w) -> dst (mb, sum c_i, h, w) (Inception blocks).
// Inputs of rank 1 (features) concatenate along the feature axis.
#pragma once

#include <memory>

#include "nn/layer.h"

namespace ts {

class Concat : public Layer {
 public:
  explicit Concat(std::string name) : Layer(std::move(name)) {}
  std::string kind() const override { return "concat"; }
  Shape setup(const std::vector<Shape>& src_shapes) override;
  TensorDesc plan(Backend& backend, int64_t mb, const std::vector<TensorDesc>& srcs) override;
  void forward(Backend& backend, const std::vector<Tensor>& srcs, const Tensor& dst,
               Mode mode) override;
  void backward(Backend& backend, const std::vector<Tensor>& srcs, const Tensor& dst,
                const Tensor& diff_dst, const std::vector<Tensor>& diff_srcs) override;
  LayerInfo info() const override;

 private:
  std::vector<int64_t> channels_;
  int64_t hw_ = 1;
  std::unique_ptr<ConcatOp> op_;  // planned per minibatch
};

}  // namespace ts
