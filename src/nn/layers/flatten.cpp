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

// A copy through the backend, which keeps the tensor's layout (the reader reorders if needed).
void Flatten::forward(Backend& backend, const std::vector<const float*>& srcs, float* dst, Mode) {
  backend.copy(mb_ * dst_shape_.numel(), srcs[0], dst);
}

void Flatten::backward(Backend& backend, const std::vector<const float*>&, const float*,
                       const float* diff_dst, const std::vector<float*>& diff_srcs) {
  if (diff_srcs[0]) backend.copy(mb_ * dst_shape_.numel(), diff_dst, diff_srcs[0]);
}

LayerInfo Flatten::info() const {
  LayerInfo row = Layer::info();
  row.descriptor = "flatten:n" + std::to_string(dst_shape_.numel());
  return row;
}

}  // namespace ts
