// Mean-squared error loss layer (see mean_squared_error.h).
#include "nn/layers/mean_squared_error.h"

#include <cstring>

namespace ts {

Shape MeanSquaredError::setup(const std::vector<Shape>& src_shapes) {
  expect_inputs(src_shapes, 1);
  outputs_ = src_shapes[0].numel();
  src_shapes_ = src_shapes;
  dst_shape_ = Shape{1};
  return dst_shape_;
}

void MeanSquaredError::set_batch(int64_t mb) {
  Layer::set_batch(mb);
  targets_.resize(static_cast<size_t>(mb * outputs_));
}

// src (mb, outputs), targets (mb, outputs) -> mean loss
float MeanSquaredError::forward_loss(Backend& backend, const float* src, const int32_t*,
                                     const float* targets) {
  if (!targets) fail("needs regression targets");
  std::memcpy(targets_.data(), targets, targets_.size() * sizeof(float));
  return backend.mse_forward(mb_ * outputs_, src, targets_.data());
}

// diff_src (mb, outputs) = 2 (src - target) / (mb * outputs)
void MeanSquaredError::backward_loss(Backend& backend, const float* src, float* diff_src) {
  backend.mse_backward(mb_ * outputs_, src, targets_.data(), diff_src);
}

LayerInfo MeanSquaredError::info() const {
  LayerInfo row = Layer::info();
  row.descriptor = "mse:n" + std::to_string(outputs_);
  row.flops = 3 * outputs_;
  return row;
}

}  // namespace ts
