// A rank's loss for one step as its exchange strategy receives it (ExchangeStrategy::begin_step):
// a value already known (host backends, tests), or a reader the strategy calls where it needs
// the value, as late as it can. On a device the host cannot address, reading waits for the
// step's forward (train/train_step.cpp): a strategy that reads it once backward is queued (the
// tail bucket, or finish_step) lets the device run backward meanwhile.
#pragma once

#include <functional>
#include <utility>

namespace ts {

class LocalLoss {
 public:
  LocalLoss(float value) : value_(value), known_(true) {}  // NOLINT: a plain loss converts
  explicit LocalLoss(std::function<float()> read) : read_(std::move(read)) {}

  // The loss; the reader runs on the first call only. Not thread-safe: one thread at a time (a
  // strategy hands it from its caller's thread to its communication thread and back in order).
  float value() {
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
};

}  // namespace ts
