// Softmax cross-entropy loss: logits (mb, classes) (a (classes,1,1) input also fits) and labels
// (mb) -> mean loss. Keeps the probabilities and a copy of the labels for backward.
#pragma once

#include "core/buffer.h"
#include "nn/layer.h"

namespace ts {

class SoftmaxCrossEntropy : public LossLayer {
 public:
  explicit SoftmaxCrossEntropy(std::string name) : LossLayer(std::move(name)) {}
  std::string kind() const override { return "softmax_xent"; }
  bool is_classifier() const override { return true; }
  Shape setup(const std::vector<Shape>& src_shapes) override;
  void set_batch(int64_t mb) override;
  float forward_loss(Backend& backend, const float* src, const int32_t* labels,
                     const float* targets) override;
  void backward_loss(Backend& backend, const float* src, float* diff_src) override;
  LayerInfo info() const override;
  const float* probabilities() const { return probs_.data(); }

 private:
  int64_t classes_ = 0;
  Buffer<float> probs_;     // (mb, classes)
  Buffer<int32_t> labels_;  // (mb)
};

}  // namespace ts
