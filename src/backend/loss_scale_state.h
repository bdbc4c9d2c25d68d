// Loss scaling as the device keeps it when the host does not read every step's overflow flag
// (loss_reads: log, train/loss_scaler.h): the state in device memory, and the rule that updates
// it after each step's check. One definition serves the host (LossScaler, the CPU backends) and
// the CUDA kernels, so both take the same decisions with the same float arithmetic.
#pragma once

#include <cstdint>

#if defined(__CUDACC__)
#define TS_HOST_DEVICE __host__ __device__
#else
#define TS_HOST_DEVICE
#endif

namespace ts {

struct LossScaleState {
  float scale = 1.0f;      // S: backward starts from S x the loss gradient
  int32_t nonfinite = 0;   // the step's unscaled gradients held an inf or NaN (set by the check)
  int64_t good_steps = 0;  // finite steps in a row since the scale last changed (dynamic)
  int64_t skipped = 0;     // steps skipped so far
};

struct LossScaleRule {
  bool dynamic = false;          // halve on an overflow, double after growth_interval good steps
  int64_t growth_interval = 2000;
  float min_scale = 1.0f / 16384.0f;  // the scale stays within fp16's normal range: below 2^-14
  float max_scale = 16777216.0f;      // it rescues nothing, above 2^24 an f32 loss's gradients overflow at once
};

// After a step's check: a non-finite step is counted as skipped and (dynamic) halves the scale;
// a finite one counts towards growth (dynamic). Halving and doubling are exact in float.
TS_HOST_DEVICE inline void apply_loss_scale_rule(LossScaleState& s, const LossScaleRule& r) {
  if (s.nonfinite != 0) {
    ++s.skipped;
    s.good_steps = 0;
    if (r.dynamic) s.scale = s.scale * 0.5f < r.min_scale ? r.min_scale : s.scale * 0.5f;
    return;
  }
  if (!r.dynamic) return;
  if (++s.good_steps >= r.growth_interval) {
    s.scale = s.scale * 2.0f > r.max_scale ? r.max_scale : s.scale * 2.0f;
    s.good_steps = 0;
  }
}

}  // namespace ts
