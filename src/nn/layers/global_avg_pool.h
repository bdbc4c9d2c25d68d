// Global average pooling: average pooling with the kernel covering the whole H x W plane.
// src (mb,c,h,w) -> dst (mb,c,1,1).
#pragma once

#include "nn/layers/pool2d.h"

namespace ts {

class GlobalAvgPool : public Pool2d {
 public:
  explicit GlobalAvgPool(std::string name);
  Shape setup(const std::vector<Shape>& src_shapes) override;
};

}  // namespace ts
