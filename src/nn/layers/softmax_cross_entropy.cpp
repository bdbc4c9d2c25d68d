// Softmax cross-entropy loss layer (see softmax_cross_entropy.h).
#include "nn/layers/softmax_cross_entropy.h"

#include <cstring>

#include "core/error.h"

namespace ts {

Shape SoftmaxCrossEntropy::setup(const std::vector<Shape>& src_shapes) {
  expect_inputs(src_shapes, 1);
  classes_ = src_shapes[0].numel();
  if (classes_ < 1) fail("needs at least one class");
  src_shapes_ = src_shapes;
  dst_shape_ = Shape{1};
  return dst_shape_;
}

void SoftmaxCrossEntropy::set_batch(int64_t mb) {
  Layer::set_batch(mb);
  probs_.resize(static_cast<size_t>(mb * classes_));
  labels_.resize(static_cast<size_t>(mb));
}

// src (mb, classes), labels (mb) -> mean loss; probs (mb, classes)
float SoftmaxCrossEntropy::forward_loss(Backend& backend, const float* src, const int32_t* labels,
                                        const float*) {
  if (!labels) fail("needs labels (a classification data set)");
  for (int64_t i = 0; i < mb_; ++i)
    if (labels[i] < 0 || labels[i] >= classes_)
      throw RuntimeError("layer " + name_ + ": label " + std::to_string(labels[i]) +
                         " out of range [0," + std::to_string(classes_) + ")");
  std::memcpy(labels_.data(), labels, static_cast<size_t>(mb_) * sizeof(int32_t));
  return backend.softmax_xent_forward(mb_, classes_, src, labels_.data(), probs_.data());
}

// diff_src (mb, classes) = (probs - onehot) / mb
void SoftmaxCrossEntropy::backward_loss(Backend& backend, const float*, float* diff_src) {
  backend.softmax_xent_backward(mb_, classes_, probs_.data(), labels_.data(), diff_src);
}

LayerInfo SoftmaxCrossEntropy::info() const {
  LayerInfo row = Layer::info();
  row.descriptor = "softmax_xent:classes" + std::to_string(classes_);
  row.flops = 4 * classes_;
  return row;
}

}  // namespace ts
