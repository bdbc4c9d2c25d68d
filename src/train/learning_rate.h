// The learning rate of each step: the configured schedule (nn/lr_schedule.h) with the linear
// scaling rule of Goyal et al. ("Accurate, Large Minibatch SGD") when lr_schedule.scale is
// linear: the peak LR is lr * k, k = global_batch / base_batch, and the warm-up ramps
// linearly from lr (the base batch's LR) to lr * k instead of from ~0.
#pragma once

#include <cstdint>

#include "config/run_config.h"
#include "nn/lr_schedule.h"

namespace ts {

class LearningRate {
 public:
  LearningRate(const RunConfig& run, int64_t global_batch, int64_t steps_per_epoch, int64_t total_steps);
  // LR of step `step0` (0-based).
  double at(int64_t step0) const;

 private:
  bool scaled_;
  double lr_, peak_;
  int64_t warmup_steps_;
  LrSchedule schedule_;
};

}  // namespace ts
