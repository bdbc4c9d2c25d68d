// Max and average pooling (average excludes padding), and global average pooling; floor
// rounding of the output size.
// src (mb,c,ih,iw) -> dst (mb,c,oh,ow). Max pooling keeps the argmax workspace for backward.
#pragma once

#include <memory>

#include "nn/layer.h"

namespace ts {

struct Pool2dOptions {
  PoolKind kind = PoolKind::max;
  int64_t kh = 2, kw = 2;
  int64_t sh = 2, sw = 2;
  int64_t ph = 0, pw = 0;
};

class Pool2d : public Layer {
 public:
  Pool2d(std::string name, Pool2dOptions options);
  // Square kernel shorthand; stride defaults to the kernel size.
  Pool2d(std::string name, PoolKind kind, int64_t kernel, int64_t stride = 0, int64_t padding = 0);
  std::string kind() const override { return "pool"; }
  TS_LAYER_OVERRIDES;
  const PoolDesc& desc() const { return desc_; }

 protected:
  Pool2dOptions options_;
  PoolDesc desc_;
  std::unique_ptr<PoolOp> op_;  // planned per minibatch
  DeviceBuffer workspace_;      // argmax for max pooling, sized by the plan
};

// Global average pooling: average pooling with the kernel covering the whole H x W plane.
// src (mb,c,h,w) -> dst (mb,c,1,1).
class GlobalAvgPool : public Pool2d {
 public:
  explicit GlobalAvgPool(std::string name) : Pool2d(std::move(name), PoolKind::avg, 1) {}
  Shape setup(const std::vector<Shape>& src_shapes) override;
};

}  // namespace ts
