// Dynamic and static loss scaling (see loss_scaler.h).
#include "train/loss_scaler.h"

#include <algorithm>

#include "core/error.h"

namespace ts {
namespace {
// The scale stays within fp16's normal range: below 2^-14 a scale no longer rescues anything,
// above 2^24 the scaled gradients of an f32 loss overflow fp16 at once.
constexpr double kMinScale = 1.0 / 16384.0;
constexpr double kMaxScale = 16777216.0;
}  // namespace

LossScaler::LossScaler(LossScaleMode mode, double init, int64_t growth_interval)
    : mode_(mode), scale_(mode == LossScaleMode::off ? 1.0 : init), growth_interval_(growth_interval) {
  TS_CHECK(mode != LossScaleMode::auto_, "LossScaler: resolve loss_scale.mode auto first");
  TS_CHECK(scale_ > 0 && growth_interval > 0, "LossScaler: the scale and the growth interval must be > 0");
}

void LossScaler::update(bool finite) {
  if (!finite) {
    ++skipped_;
    good_steps_ = 0;
    if (mode_ == LossScaleMode::dynamic) scale_ = std::max(kMinScale, scale_ / 2);
    return;
  }
  if (mode_ != LossScaleMode::dynamic) return;
  if (++good_steps_ >= growth_interval_) {
    scale_ = std::min(kMaxScale, scale_ * 2);
    good_steps_ = 0;
  }
}

void LossScaler::restore(double scale, int64_t good_steps, int64_t skipped_steps) {
  TS_CHECK(scale > 0 && good_steps >= 0 && skipped_steps >= 0, "LossScaler::restore: a checkpoint holds scale " +
                                                                   std::to_string(scale) + ", good steps " +
                                                                   std::to_string(good_steps));
  scale_ = scale;
  good_steps_ = good_steps;
  skipped_ = skipped_steps;
}

}  // namespace ts
