// Flatten layer (see flatten.h).
#include "nn/layers/flatten.h"

#include <cstring>

namespace ts {

Shape Flatten::setup(const std::vector<Shape>& src_shapes) {
  expect_inputs(src_shapes, 1);
  src_shapes_ = src_shapes;
  dst_shape_ = Shape{src_shapes[0].numel()};
  return dst_shape_;
}

void Flatten::forward(Backend&, const std::vector<const float*>& srcs, float* dst, Mode) {
  std::memcpy(dst, srcs[0], static_cast<size_t>(mb_ * dst_shape_.numel()) * sizeof(float));
}

void Flatten::backward(Backend&, const std::vector<const float*>&, const float*,
                       const float* diff_dst, const std::vector<float*>& diff_srcs) {
  if (diff_srcs[0])
    std::memcpy(diff_srcs[0], diff_dst,
                static_cast<size_t>(mb_ * dst_shape_.numel()) * sizeof(float));
}

LayerInfo Flatten::info() const {
  LayerInfo row = Layer::info();
  row.descriptor = "flatten:n" + std::to_string(dst_shape_.numel());
  return row;
}

}  // namespace ts
