// Flatten: (C,H,W) -> (C*H*W). NCHW is row-major, so the data is copied unchanged.
// src (mb,c,h,w) -> dst (mb, c*h*w).
#pragma once

#include "nn/layer.h"

namespace ts {

class Flatten : public Layer {
 public:
  explicit Flatten(std::string name) : Layer(std::move(name)) {}
  std::string kind() const override { return "flatten"; }
  Shape setup(const std::vector<Shape>& src_shapes) override;
  TensorDesc plan(Backend& backend, int64_t mb, const std::vector<TensorDesc>& srcs) override;
  void forward(Backend& backend, const std::vector<Tensor>& srcs, const Tensor& dst,
               Mode mode) override;
  void backward(Backend& backend, const std::vector<Tensor>& srcs, const Tensor& dst,
                const Tensor& diff_dst, const std::vector<Tensor>& diff_srcs) override;
  LayerInfo info() const override;
};

}  // namespace ts
