// The learning rate of each step: the configured schedule (nn/lr_schedule.h) with the linear
// scaling rule of Goyal et al. ("Accurate, Large Minibatch SGD") when lr_schedule.scale is
// linear: the peak LR is lr * k, k = global_batch / base_batch, and the warm-up ramps
// linearly from lr (the base batch's LR) to lr * k instead of from ~0.
#pragma once

#include <cstdint>

#include "nn/lr_schedule.h"

namespace ts {

// What the learning rate takes of lr and lr_schedule.* (train/phase_options.h lr_options_of).
struct LrOptions {
  double lr = 0.01;             // the LR of the base batch
  bool linear_scaling = false;  // lr_schedule.scale linear
  int64_t base_batch = 0;       // lr_schedule.base_batch (0: the global batch)
  LrScheduleOptions schedule;   // its warm-up is the scaling's ramp when linear_scaling
};

class LearningRate {
 public:
  LearningRate(const LrOptions& options, int64_t global_batch, int64_t steps_per_epoch, int64_t total_steps);
  // LR of step `step0` (0-based).
  double at(int64_t step0) const;

 private:
  bool scaled_;
  double lr_, peak_;
  int64_t warmup_steps_;
  LrSchedule schedule_;
};

}  // namespace ts
