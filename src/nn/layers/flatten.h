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
  void forward(Backend& backend, const std::vector<const float*>& srcs, float* dst,
               Mode mode) override;
  void backward(Backend& backend, const std::vector<const float*>& srcs, const float* dst,
                const float* diff_dst, const std::vector<float*>& diff_srcs) override;
  LayerInfo info() const override;
};

}  // namespace ts
