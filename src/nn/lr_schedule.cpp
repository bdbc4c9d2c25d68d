// Learning-rate schedules (see lr_schedule.h).
#include "nn/lr_schedule.h"

#include <algorithm>
#include <cmath>
#include <numbers>

#include "core/error.h"

namespace ts {

LrSchedule::LrSchedule(double base_lr, LrScheduleOptions options, int64_t steps_per_epoch,
                       int64_t total_steps)
    : base_lr_(base_lr),
      options_(std::move(options)),
      steps_per_epoch_(steps_per_epoch),
      total_steps_(total_steps) {
  if (options_.kind != "constant" && options_.kind != "step" && options_.kind != "cosine")
    throw ConfigError("lr_schedule.kind: unknown value '" + options_.kind +
                      "'; accepted: constant, step, cosine");
  if (!(base_lr > 0.0) || !std::isfinite(base_lr))
    throw ConfigError("lr must be a positive number, got " + std::to_string(base_lr));
  if (steps_per_epoch < 1) throw ConfigError("lr_schedule: steps per epoch must be >= 1");
  if (total_steps < 1) throw ConfigError("lr_schedule: total steps must be >= 1");
  if (!(options_.warmup_epochs >= 0.0))
    throw ConfigError("lr_schedule.warmup_epochs must be >= 0, got " +
                      std::to_string(options_.warmup_epochs));
  if (options_.kind == "step" && !(options_.step_epochs > 0.0))
    throw ConfigError("lr_schedule.step_epochs must be > 0, got " +
                      std::to_string(options_.step_epochs));
  if (options_.kind == "step" && !(options_.gamma > 0.0))
    throw ConfigError("lr_schedule.gamma must be > 0, got " + std::to_string(options_.gamma));
  if (!(options_.final_lr_fraction >= 0.0 && options_.final_lr_fraction <= 1.0))
    throw ConfigError("lr_schedule.final_lr_fraction must be in [0, 1], got " +
                      std::to_string(options_.final_lr_fraction));
  warmup_steps_ = static_cast<int64_t>(
      std::llround(options_.warmup_epochs * static_cast<double>(steps_per_epoch)));
}

double LrSchedule::at(int64_t step) const {
  if (step < 0) step = 0;
  if (step < warmup_steps_)
    return base_lr_ * static_cast<double>(step + 1) / static_cast<double>(warmup_steps_);
  if (options_.kind == "constant") return base_lr_;
  if (options_.kind == "step") {
    double epoch = static_cast<double>(step) / static_cast<double>(steps_per_epoch_);
    return base_lr_ * std::pow(options_.gamma, std::floor(epoch / options_.step_epochs));
  }
  // cosine
  const double final_lr = options_.final_lr_fraction * base_lr_;
  const int64_t span = total_steps_ - warmup_steps_;
  double t = span > 0 ? static_cast<double>(step - warmup_steps_) / static_cast<double>(span) : 1.0;
  t = std::clamp(t, 0.0, 1.0);
  return final_lr + (base_lr_ - final_lr) * 0.5 * (1.0 + std::cos(std::numbers::pi * t));
}

}  // namespace ts
