// Loss scaling for mixed-precision training (Micikevicius et al., "Mixed Precision Training",
// 2018): backward starts from the loss gradient times S, so that small gradients survive in
// fp16 activations; the update divides S out of the f32 gradients again. Dynamic scaling finds S
// as it goes: a step whose averaged gradients hold an inf or NaN (an fp16 overflow) is skipped
// and S halves; growth_interval good steps in a row double S. Every rank of a synchronous run
// sees the same averaged gradients, so every rank takes the same decisions.
#pragma once

#include <cstdint>

#include "config/run_config.h"

namespace ts {

class LossScaler {
 public:
  // `mode` as RunConfig::effective_loss_scale() resolves it (never auto).
  LossScaler(LossScaleMode mode, double init, int64_t growth_interval);
  static LossScaler from_config(const RunConfig& r) {
    return LossScaler(r.effective_loss_scale(), r.loss_scale.init, r.loss_scale.growth_interval);
  }
  bool enabled() const { return mode_ != LossScaleMode::off; }
  LossScaleMode mode() const { return mode_; }
  float scale() const { return static_cast<float>(scale_); }
  // After a step's gradients were checked: a finite step counts towards growth, a non-finite one
  // is counted as skipped and (dynamic) halves the scale.
  void update(bool finite);
  int64_t skipped_steps() const { return skipped_; }
  int64_t good_steps() const { return good_steps_; }
  double exact_scale() const { return scale_; }  // scale() before its rounding to float
  // Continues where a checkpointed scaler stopped (scale, good steps in a row, skipped steps).
  void restore(double scale, int64_t good_steps, int64_t skipped_steps);

 private:
  LossScaleMode mode_;
  double scale_;
  int64_t growth_interval_;
  int64_t good_steps_ = 0;  // finite steps since the last change
  int64_t skipped_ = 0;
};

}  // namespace ts
