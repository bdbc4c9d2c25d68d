// hogwild on the main thread (see hogwild_strategy.h).
#include "dist/hogwild_strategy.h"

#include <cmath>
#include <utility>

#include "core/error.h"
#include "core/timer.h"

namespace ts {

HogwildExchange::HogwildExchange(ModelArenas arenas, int64_t total_steps, std::function<void()> after_last_step)
    : arenas_(arenas), total_steps_(total_steps), after_last_step_(std::move(after_last_step)) {
  if (!arenas.device.host_accessible)
    throw ConfigError("dist.strategy: hogwild shares one host parameter arena between threads; use a CPU backend "
                      "(cpu or ref)");
  buckets_.push_back({0, arenas.param_count});
}

void HogwildExchange::begin_step(LocalLoss local_loss, RangeUpdate update) {
  local_loss_ = std::move(local_loss);
  update_ = std::move(update);
}

StepVerdict HogwildExchange::finish_step(bool /*average_weights*/) {
  StepVerdict v;
  v.loss = local_loss_.value();
  v.diverged = !std::isfinite(local_loss_.value());
  const double t0 = now_seconds();
  if (!v.diverged) update_(0, arenas_.param_count);  // racing the other replicas' updates, by design
  const double t1 = now_seconds();
  v.times.optimizer = t1 - t0;
  if (++step_ == total_steps_ || v.diverged) leave();
  v.times.comm_wait = now_seconds() - t1;  // the last step: waiting for the other replicas
  return v;
}

void HogwildExchange::leave() {
  if (std::function<void()> done = std::exchange(after_last_step_, nullptr)) done();  // once
}

}  // namespace ts
