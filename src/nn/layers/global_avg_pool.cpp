// Global average pooling layer (see global_avg_pool.h).
#include "nn/layers/global_avg_pool.h"

namespace ts {

GlobalAvgPool::GlobalAvgPool(std::string name) : Pool2d(std::move(name), PoolKind::avg, 1) {}

Shape GlobalAvgPool::setup(const std::vector<Shape>& src_shapes) {
  expect_inputs(src_shapes, 1);
  const Shape& s = src_shapes[0];
  if (s.rank() != 3) fail("expects a (C,H,W) input, got " + s.str());
  options_.kind = PoolKind::avg;
  options_.kh = options_.sh = s[1];
  options_.kw = options_.sw = s[2];
  options_.ph = options_.pw = 0;
  return Pool2d::setup(src_shapes);
}

}  // namespace ts
