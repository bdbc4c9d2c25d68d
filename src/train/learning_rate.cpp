// The learning rate per step (see learning_rate.h).
#include "train/learning_rate.h"

#include <cmath>

namespace ts {
namespace {

double peak_lr(const LrOptions& o, int64_t global_batch) {
  if (!o.linear_scaling) return o.lr;
  const int64_t base = o.base_batch > 0 ? o.base_batch : global_batch;
  return o.lr * static_cast<double>(global_batch) / static_cast<double>(base);
}

}  // namespace

LearningRate::LearningRate(const LrOptions& o, int64_t global_batch, int64_t steps_per_epoch, int64_t total_steps)
    : scaled_(o.linear_scaling),
      lr_(o.lr),
      peak_(peak_lr(o, global_batch)),
      warmup_steps_(static_cast<int64_t>(std::llround(o.schedule.warmup_epochs * static_cast<double>(steps_per_epoch)))),
      schedule_(peak_, o.schedule, steps_per_epoch, total_steps) {}

double LearningRate::at(int64_t step0) const {
  if (scaled_ && step0 < warmup_steps_)
    return lr_ + (peak_ - lr_) * static_cast<double>(step0) / static_cast<double>(warmup_steps_);
  return schedule_.at(step0);
}

}  // namespace ts
