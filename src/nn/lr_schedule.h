// Learning-rate schedules by step: linear warm-up from base_lr/W to base_lr over the first
// W = warmup_epochs * steps_per_epoch steps, then
//   constant: base_lr
//   step:     base_lr * gamma^floor(epoch / step_epochs)   (epoch = step / steps_per_epoch)
//   cosine:   final + (base_lr - final) * (1 + cos(pi * t)) / 2, t = (step - W) / (total - W),
//             final = final_lr_fraction * base_lr, reached at total_steps and held after.
#pragma once

#include <cstdint>
#include <string>

namespace ts {

struct LrScheduleOptions {
  std::string kind = "constant";  // constant | step | cosine
  double warmup_epochs = 0;
  double step_epochs = 1;
  double gamma = 0.1;
  double final_lr_fraction = 0;
};

class LrSchedule {
 public:
  // Throws ConfigError for an unknown kind (listing the accepted ones) or an impossible value.
  LrSchedule(double base_lr, LrScheduleOptions options, int64_t steps_per_epoch,
             int64_t total_steps);
  // Learning rate of step `step` (0-based).
  double at(int64_t step) const;

 private:
  double base_lr_;
  LrScheduleOptions options_;
  int64_t steps_per_epoch_;
  int64_t total_steps_;
  int64_t warmup_steps_;
};

}  // namespace ts
