// Loss scaling decided in the backend's queue (loss_reads: log; backend/loss_scale_state.h): the
// step queues the check, the update if finite and the rule, and none of them waits for the
// device. `state` is backend memory holding a LossScaleState. cuda implements it with kernels;
// for backends that compute in host memory HostLossScaling runs each call at once. LossScaler
// asks for it once (capability<DeviceLossScaling>, backend.h).
#pragma once

#include <cstdint>

#include "backend/backend.h"
#include "backend/loss_scale_state.h"

namespace ts {

class DeviceLossScaling {
 public:
  virtual ~DeviceLossScaling() = default;
  // x *= 1 / state->scale over n values (the float reciprocal, as the host's
  // scale_check_finite(n, 1.0f / scale, x)); state->nonfinite = some x was not finite before.
  virtual void unscale_check(int64_t n, LossScaleState* state, float* x) = 0;
  // Backend::sgd_step unless state->nonfinite.
  virtual void sgd_step_if_finite(const LossScaleState* state, int64_t n, float lr, float momentum,
                                  float weight_decay, bool nesterov, float* weights, const float* grads,
                                  float* velocity) = 0;
  // apply_loss_scale_rule on the state.
  virtual void update_loss_scale(LossScaleState* state, const LossScaleRule& rule) = 0;
};

// The same through a host-memory backend's own ops: the state is host memory, each call runs at once.
class HostLossScaling final : public DeviceLossScaling {
 public:
  explicit HostLossScaling(Backend& backend) : backend_(backend) {}
  void unscale_check(int64_t n, LossScaleState* state, float* x) override {
    state->nonfinite = backend_.scale_check_finite(n, 1.0f / state->scale, x) ? 0 : 1;
  }
  void sgd_step_if_finite(const LossScaleState* state, int64_t n, float lr, float momentum, float weight_decay,
                          bool nesterov, float* weights, const float* grads, float* velocity) override {
    if (state->nonfinite == 0) backend_.sgd_step(n, lr, momentum, weight_decay, nesterov, weights, grads, velocity);
  }
  void update_loss_scale(LossScaleState* state, const LossScaleRule& rule) override {
    apply_loss_scale_rule(*state, rule);
  }

 private:
  Backend& backend_;
};

}  // namespace ts
