// Mean-squared error loss layer (see mean_squared_error.h).
#include "nn/layers/mean_squared_error.h"

namespace ts {

Shape MeanSquaredError::setup(const std::vector<Shape>& src_shapes) {
  expect_inputs(src_shapes, 1);
  outputs_ = src_shapes[0].numel();
  return set_shapes(src_shapes, Shape{1});
}

TensorDesc MeanSquaredError::plan(Backend& backend, int64_t mb, const std::vector<TensorDesc>& srcs) {
  plan_batch(mb);
  op_ = backend.plan_mse(srcs[0]);
  targets_ = backend.allocate(static_cast<size_t>(mb * outputs_) * sizeof(float));
  return TensorDesc::plain(Shape{1});
}

// src (mb, outputs), targets (mb, outputs, host) -> mean loss into loss[0]
void MeanSquaredError::forward_loss(Backend& backend, const Tensor& src, const int32_t*,
                                    const float* targets, float* loss) {
  if (!targets) fail("needs regression targets");
  backend.copy_from_host(targets_.data(), targets, targets_.bytes());
  op_->forward(src, targets_.f32(), loss);
}

// diff_src (mb, outputs) = 2 (src - target) / (mb * outputs)
void MeanSquaredError::backward_loss(Backend&, const Tensor& src, const Tensor& diff_src) {
  op_->backward(src, targets_.f32(), loss_scale_, diff_src);
}

LayerInfo MeanSquaredError::info() const {
  LayerInfo row = Layer::info();
  row.descriptor = "mse:n" + std::to_string(outputs_);
  row.flops = 3 * outputs_;
  return row;
}

}  // namespace ts
