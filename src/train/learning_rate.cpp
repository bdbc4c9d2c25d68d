// The learning rate per step (see learning_rate.h).
#include "train/learning_rate.h"

#include <cmath>

namespace ts {
namespace {

double peak_lr(const RunConfig& r, int64_t global_batch) {
  if (r.lr_schedule.scale != LrScale::linear) return r.lr;
  const int64_t base = r.lr_schedule.base_batch > 0 ? r.lr_schedule.base_batch : global_batch;
  return r.lr * static_cast<double>(global_batch) / static_cast<double>(base);
}

LrScheduleOptions schedule_options(const LrScheduleConfig& c) {
  LrScheduleOptions o;
  o.kind = lr_schedule_kind_name(c.kind);
  o.warmup_epochs = c.warmup_epochs;
  o.step_epochs = c.step_epochs;
  o.gamma = c.gamma;
  o.final_lr_fraction = c.final_lr_fraction;
  return o;
}

}  // namespace

LearningRate::LearningRate(const RunConfig& r, int64_t global_batch, int64_t steps_per_epoch, int64_t total_steps)
    : scaled_(r.lr_schedule.scale == LrScale::linear),
      lr_(r.lr),
      peak_(peak_lr(r, global_batch)),
      warmup_steps_(static_cast<int64_t>(std::llround(r.lr_schedule.warmup_epochs * static_cast<double>(steps_per_epoch)))),
      schedule_(peak_, schedule_options(r.lr_schedule), steps_per_epoch, total_steps) {}

double LearningRate::at(int64_t step0) const {
  if (scaled_ && step0 < warmup_steps_)
    return lr_ + (peak_ - lr_) * static_cast<double>(step0) / static_cast<double>(warmup_steps_);
  return schedule_.at(step0);
}

}  // namespace ts
