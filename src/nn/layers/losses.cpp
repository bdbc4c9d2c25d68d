// The loss layers (see losses.h).
#include "nn/layers/losses.h"

#include "core/error.h"

namespace ts {

// ---- softmax cross-entropy ------------------------------------------------------------------
Shape SoftmaxCrossEntropy::setup(const std::vector<Shape>& src_shapes) {
  expect_inputs(src_shapes, 1);
  classes_ = src_shapes[0].numel();
  if (classes_ < 1) fail("needs at least one class");
  return set_shapes(src_shapes, Shape{1});
}

TensorDesc SoftmaxCrossEntropy::plan(Backend& backend, int64_t mb, const std::vector<TensorDesc>& srcs) {
  plan_batch(mb);
  op_ = backend.plan_softmax_xent(srcs[0]);
  probs_ = backend.allocate(static_cast<size_t>(mb * classes_) * sizeof(float));
  labels_ = backend.allocate(static_cast<size_t>(mb) * sizeof(int32_t));
  return TensorDesc::plain(Shape{1});
}

// src (mb, classes), labels (mb, host) -> mean loss into loss[0]; probs (mb, classes)
void SoftmaxCrossEntropy::forward_loss(Backend& backend, const Tensor& src, const int32_t* labels,
                                       const float*, float* loss) {
  if (!labels) fail("needs labels (a classification data set)");
  for (int64_t i = 0; i < mb_; ++i)
    if (labels[i] < 0 || labels[i] >= classes_)
      throw RuntimeError("layer " + name_ + ": label " + std::to_string(labels[i]) + " of sample " +
                         std::to_string(i) + " is out of range [0," + std::to_string(classes_) + ")");
  backend.copy_from_host(labels_.data(), labels, static_cast<size_t>(mb_) * sizeof(int32_t));
  op_->forward(src, static_cast<const int32_t*>(labels_.data()), probs_.f32(), loss);
}

// diff_src (mb, classes) = (probs - onehot) / mb
void SoftmaxCrossEntropy::backward_loss(Backend&, const Tensor&, const Tensor& diff_src) {
  op_->backward(probs_.f32(), static_cast<const int32_t*>(labels_.data()), loss_scale_, diff_src);
}

LayerInfo SoftmaxCrossEntropy::info() const {
  LayerInfo row = Layer::info();
  row.descriptor = "softmax_xent:classes" + std::to_string(classes_);
  row.flops = 4 * classes_;
  return row;
}

// ---- mean-squared error --------------------------------------------------------------------
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
