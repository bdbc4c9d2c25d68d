// Mean-squared error loss: predictions (mb, outputs) and targets (mb, outputs) ->
// mean over all mb*outputs values of (pred - target)^2. Keeps a copy of the targets.
#pragma once

#include "core/buffer.h"
#include "nn/layer.h"

namespace ts {

class MeanSquaredError : public LossLayer {
 public:
  explicit MeanSquaredError(std::string name) : LossLayer(std::move(name)) {}
  std::string kind() const override { return "mse"; }
  bool is_classifier() const override { return false; }
  Shape setup(const std::vector<Shape>& src_shapes) override;
  void set_batch(int64_t mb) override;
  float forward_loss(Backend& backend, const float* src, const int32_t* labels,
                     const float* targets) override;
  void backward_loss(Backend& backend, const float* src, float* diff_src) override;
  LayerInfo info() const override;

 private:
  int64_t outputs_ = 0;
  Buffer<float> targets_;  // (mb, outputs)
};

}  // namespace ts
