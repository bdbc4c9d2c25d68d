// Loss scaling for mixed-precision training (Micikevicius et al., "Mixed Precision Training",
// 2018): backward starts from the loss gradient times S, so that small gradients survive in
// fp16 activations; the update divides S out of the f32 gradients again. Dynamic scaling finds S
// as it goes: a step whose averaged gradients hold an inf or NaN (an fp16 overflow) is skipped
// and S halves; growth_interval good steps in a row double S. Every rank of a synchronous run
// sees the same averaged gradients, so every rank takes the same decisions.
//
// The host decides each step (update), or, with loss_reads: log, the device does: after
// keep_on_device the state lives in device memory, the step queues the check, the update if
// finite and the rule (backend/device_loss_scaling.h; the rule is backend/loss_scale_state.h's,
// the same for both), and the host reads the state back at its boundaries (read_back) before it
// reports or checkpoints it.
#pragma once

#include <cstdint>
#include <memory>

#include "backend/backend.h"
#include "backend/device_loss_scaling.h"
#include "backend/loss_scale_state.h"
#include "config/run_enums.h"

namespace ts {

// What the scaler takes of loss_scale.*: `mode` as RunConfig::effective_loss_scale() resolves it.
struct LossScaleOptions {
  LossScaleMode mode = LossScaleMode::off;
  double init = 65536.0;
  int64_t growth_interval = 2000;
};

class LossScaler {
 public:
  // `mode` as RunConfig::effective_loss_scale() resolves it (never auto); the scale is a float.
  LossScaler(LossScaleMode mode, double init, int64_t growth_interval);
  bool enabled() const { return mode_ != LossScaleMode::off; }
  LossScaleMode mode() const { return mode_; }
  const LossScaleRule& rule() const { return rule_; }
  // After a step's gradients were checked on the host: a finite step counts towards growth, a
  // non-finite one is counted as skipped and (dynamic) halves the scale.
  void update(bool finite);
  // The host's copy (after read_back when the state is on the device).
  float scale() const;
  int64_t skipped_steps() const;
  int64_t good_steps() const;
  // Continues where a checkpointed scaler stopped (scale, good steps in a row, skipped steps);
  // before keep_on_device.
  void restore(double scale, int64_t good_steps, int64_t skipped_steps);

  // loss_reads: log. Moves the state into `backend`'s memory; the step then queues its decision
  // on device_state() through device_ops() (the backend's DeviceLossScaling, or HostLossScaling
  // where it computes in host memory) and backward reads the scale there.
  void keep_on_device(Backend& backend);
  DeviceLossScaling& device_ops() { return *device_ops_; }
  bool on_device() const { return device_.data() != nullptr; }
  // The state for the step to queue its decision on: the host's copy is stale from then on.
  LossScaleState* device_state() {
    host_current_ = false;
    return static_cast<LossScaleState*>(device_.data());
  }
  // Copies the device's state to the host copy (waits for the work queued before).
  void read_back();

 private:
  const LossScaleState& host() const;
  LossScaleMode mode_;
  LossScaleRule rule_;
  LossScaleState state_;  // the host's copy
  Backend* backend_ = nullptr;
  DeviceBuffer device_;       // the state while on the device
  DeviceLossScaling* device_ops_ = nullptr;    // set by keep_on_device: the backend's, or...
  std::unique_ptr<HostLossScaling> host_ops_;  // ... this one
  bool host_current_ = true;  // false from keep_on_device until read_back
};

}  // namespace ts
