// A rank's loss for one step as its exchange strategy receives it (ExchangeStrategy::begin_step):
// a value already known (host backends, tests), a reader the strategy calls where it needs the
// value, as late as it can, or (loss_reads: log with an exchange that combines the losses on the
// device, dist/device_loss_combiner.h) the loss's place in device memory, which
// the host never reads in the step. On a device the host cannot address, reading waits for the
// step's forward (train/train_step.cpp): a strategy that reads it once backward is queued (the
// tail bucket, or finish_step) lets the device run backward meanwhile.
#pragma once

#include <functional>
#include <utility>

#include "core/error.h"

namespace ts {

class LocalLoss {
 public:
  LocalLoss(float value) : value_(value), known_(true) {}  // NOLINT: a plain loss converts
  explicit LocalLoss(std::function<float()> read) : read_(std::move(read)) {}
  // The loss is the float at `device_loss` (device memory, final once the step's forward has
  // run on the device) times `weight` (a share's weight, train/train_step.cpp).
  static LocalLoss on_device(const float* device_loss, float weight) {
    LocalLoss l(0.0f);
    l.known_ = false;
    l.device_loss_ = device_loss;
    l.weight_ = weight;
    return l;
  }

  bool on_device() const { return device_loss_ != nullptr; }
  const float* device_loss() const { return device_loss_; }
  float weight() const { return weight_; }

  // The loss; the reader runs on the first call only. Not thread-safe: one thread at a time (a
  // strategy hands it from its caller's thread to its communication thread and back in order).
  // A loss on the device is not for the host (a strategy that can combine it there asked for it).
  float value() {
    TS_CHECK(!device_loss_, "LocalLoss::value: this step's loss stays on the device (loss_reads log)");
    if (!known_) {
      value_ = read_();
      known_ = true;
    }
    return value_;
  }

 private:
  std::function<float()> read_;
  float value_ = 0;
  bool known_ = false;
  const float* device_loss_ = nullptr;
  float weight_ = 1.0f;
};

}  // namespace ts
