// Stochastic gradient descent with momentum, Nesterov momentum and L2 weight decay over the
// flat parameter arena (one backend.sgd_step call per step):
//   g' = g + weight_decay * w;  v = momentum * v + g';  w -= lr * (nesterov ? g' + momentum*v : v)
// Weight decay applies to EVERY parameter, biases and BN scale/shift included (no exclusion
// list), as in the Caffe/cuda-convnet setups this suite reproduces.
#pragma once

#include <cstdint>

#include "backend/backend.h"
#include "backend/device_loss_scaling.h"

namespace ts {

struct SgdOptions {
  double momentum = 0;
  double weight_decay = 0;
  bool nesterov = false;
};

class Sgd {
 public:
  // Throws ConfigError for momentum outside [0,1), negative weight decay, or Nesterov without
  // momentum.
  Sgd(Backend& backend, int64_t param_count, SgdOptions options);
  // params/grads: param_count floats each (device memory); the velocity is owned here.
  void step(float* params, const float* grads, double lr) { step_range(params, grads, lr, 0, count_); }
  // The same update on elements [offset, offset + count) only (params/grads: the whole arenas);
  // elements are independent, so stepping disjoint ranges equals one step over their union.
  // With `unless_nonfinite` (device memory, loss_reads: log) `scaling` queues the update, which
  // the device skips when that step's loss-scaling check found a non-finite gradient.
  void step_range(float* params, const float* grads, double lr, int64_t offset, int64_t count,
                  const LossScaleState* unless_nonfinite = nullptr, DeviceLossScaling* scaling = nullptr);
  float* velocity() { return velocity_.f32(); }  // device memory
  const SgdOptions& options() const { return options_; }

 private:
  Backend& backend_;
  int64_t count_;
  SgdOptions options_;
  DeviceBuffer velocity_;  // (param_count) f32
};

}  // namespace ts
