// Flatten: (C,H,W) -> (C*H*W). NCHW is row-major, so the data is copied unchanged.
// src (mb,c,h,w) -> dst (mb, c*h*w).
#pragma once

#include "nn/layer.h"

namespace ts {

class Flatten : public Layer {
 public:
  explicit Flatten(std::string name) : Layer(std::move(name)) {}
  std::string kind() const override { return "flatten"; }
  TS_LAYER_OVERRIDES;
};

}  // namespace ts
