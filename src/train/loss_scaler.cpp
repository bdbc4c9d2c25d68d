// Dynamic and static loss scaling (see loss_scaler.h).
#include "train/loss_scaler.h"

#include "core/error.h"

namespace ts {

LossScaler::LossScaler(LossScaleMode mode, double init, int64_t growth_interval) : mode_(mode) {
  TS_CHECK(mode != LossScaleMode::auto_, "LossScaler: resolve loss_scale.mode auto first");
  TS_CHECK(init > 0 && growth_interval > 0, "LossScaler: the scale and the growth interval must be > 0");
  rule_.dynamic = mode == LossScaleMode::dynamic;
  rule_.growth_interval = growth_interval;
  state_.scale = mode == LossScaleMode::off ? 1.0f : static_cast<float>(init);
}

void LossScaler::update(bool finite) {
  TS_CHECK(!on_device(), "LossScaler::update: the state is on the device (loss_reads: log)");
  state_.nonfinite = finite ? 0 : 1;
  apply_loss_scale_rule(state_, rule_);
}

const LossScaleState& LossScaler::host() const {
  TS_CHECK(host_current_, "LossScaler: the state is on the device; read_back() first");
  return state_;
}

float LossScaler::scale() const { return host().scale; }
int64_t LossScaler::skipped_steps() const { return host().skipped; }
int64_t LossScaler::good_steps() const { return host().good_steps; }

void LossScaler::restore(double scale, int64_t good_steps, int64_t skipped_steps) {
  TS_CHECK(scale > 0 && good_steps >= 0 && skipped_steps >= 0, "LossScaler::restore: a checkpoint holds scale " +
                                                                   std::to_string(scale) + ", good steps " +
                                                                   std::to_string(good_steps));
  TS_CHECK(!on_device(), "LossScaler::restore after keep_on_device");
  state_.scale = static_cast<float>(scale);
  state_.good_steps = good_steps;
  state_.skipped = skipped_steps;
}

void LossScaler::keep_on_device(Backend& backend) {
  TS_CHECK(!on_device(), "LossScaler::keep_on_device twice");
  backend_ = &backend;
  device_ops_ = capability<DeviceLossScaling>(backend);
  if (!device_ops_) device_ops_ = (host_ops_ = std::make_unique<HostLossScaling>(backend)).get();
  device_ = backend.allocate(sizeof(LossScaleState));
  backend.copy_from_host(device_.data(), &state_, sizeof(LossScaleState));
  host_current_ = false;
}

void LossScaler::read_back() {
  if (!on_device()) return;
  backend_->copy_to_host(&state_, device_.data(), sizeof(LossScaleState));
  host_current_ = true;
}

}  // namespace ts
