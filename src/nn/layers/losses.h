// The loss layers: the last node of every net, reading the predictions of one node.
#pragma once

#include <memory>

#include "nn/layer.h"

namespace ts {

// Softmax cross-entropy loss: logits (mb, classes) (a (classes,1,1) input also fits) and labels
// (mb) -> mean loss. Keeps the probabilities and the labels (device memory) for backward.
class SoftmaxCrossEntropy : public LossLayer {
 public:
  explicit SoftmaxCrossEntropy(std::string name) : LossLayer(std::move(name)) {}
  std::string kind() const override { return "softmax_xent"; }
  bool is_classifier() const override { return true; }
  Shape setup(const std::vector<Shape>& src_shapes) override;
  TensorDesc plan(Backend& backend, int64_t mb, const std::vector<TensorDesc>& srcs) override;
  void forward_loss(Backend& backend, const Tensor& src, const int32_t* labels,
                    const float* targets, float* loss) override;
  void backward_loss(Backend& backend, const Tensor& src, const Tensor& diff_src) override;
  LayerInfo info() const override;
  // (mb, classes) of the last forward, device memory.
  const float* probabilities() const { return probs_.f32(); }

 private:
  int64_t classes_ = 0;
  std::unique_ptr<SoftmaxXentOp> op_;  // planned per minibatch
  DeviceBuffer probs_;   // (mb, classes) f32
  DeviceBuffer labels_;  // (mb) int32
};

// Mean-squared error loss: predictions (mb, outputs) and targets (mb, outputs) ->
// mean over all mb*outputs values of (pred - target)^2. Keeps a copy of the targets.
class MeanSquaredError : public LossLayer {
 public:
  explicit MeanSquaredError(std::string name) : LossLayer(std::move(name)) {}
  std::string kind() const override { return "mse"; }
  bool is_classifier() const override { return false; }
  Shape setup(const std::vector<Shape>& src_shapes) override;
  TensorDesc plan(Backend& backend, int64_t mb, const std::vector<TensorDesc>& srcs) override;
  void forward_loss(Backend& backend, const Tensor& src, const int32_t* labels,
                    const float* targets, float* loss) override;
  void backward_loss(Backend& backend, const Tensor& src, const Tensor& diff_src) override;
  LayerInfo info() const override;

 private:
  int64_t outputs_ = 0;
  std::unique_ptr<MseOp> op_;  // planned per minibatch
  DeviceBuffer targets_;       // (mb, outputs) f32
};

}  // namespace ts
