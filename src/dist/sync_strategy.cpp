// `sync` gradient averaging (see sync_strategy.h).
#include "dist/sync_strategy.h"

#include <cmath>

#include "core/timer.h"

namespace ts {

SyncExchange::SyncExchange(Communicator& comm, ModelArenas arenas, const ExchangeOptions& options)
    : comm_(comm),
      arenas_(arenas),
      algorithm_(options.algorithm),
      plan_(BucketPlan::tile(arenas.param_count, options.bucket_elements)),
      staging_(plan_.tail()),
      pipeline_(plan_, arenas.param_count, options.overlap, [this](size_t i) { reduce_bucket(i); }) {}

void SyncExchange::broadcast_model() {
  comm_.broadcast(arenas_.params, arenas_.param_count, 0);
  comm_.broadcast(arenas_.state, arenas_.state_count, 0);
}

void SyncExchange::begin_step(float local_loss, RangeUpdate update) {
  local_loss_ = local_loss;
  update_ = std::move(update);
  times_ = ExchangeTimes{};
  pipeline_.begin_step();
}

void SyncExchange::gradients_ready(int64_t offset, int64_t count) { pipeline_.gradients_ready(offset, count); }

// Sums one gradient bucket over ranks and scales it to the mean. The last bucket goes through
// the staging buffer with the loss and the non-finite flag.
void SyncExchange::reduce_bucket(size_t i) {
  const auto [offset, count] = plan_.buckets[i];
  const bool last = i + 1 == plan_.buckets.size();
  const double t0 = now_seconds();
  float* data = arenas_.grads + offset;
  int64_t n = count;
  if (last) {
    copy_floats(staging_.data(), data, count);
    staging_.set_extras(local_loss_, std::isfinite(local_loss_) ? 0.0f : 1.0f);
    data = staging_.data();
    n = staging_.size();
  }
  allreduce_sum(comm_, algorithm_, data, n);
  if (comm_.size() > 1) scale(data, count, 1.0f / static_cast<float>(comm_.size()));
  if (last) copy_floats(arenas_.grads + offset, staging_.data(), count);
  times_.comm += now_seconds() - t0;
}

StepVerdict SyncExchange::finish_step(bool /*average_weights: every step exchanges*/) {
  times_.comm_wait += pipeline_.complete();
  StepVerdict v;
  staging_.read_verdict(v, comm_.size());
  if (!v.diverged) timed_update(update_, 0, arenas_.param_count, times_);
  v.times = times_;
  return v;
}

void SyncExchange::average_state() { average_over_ranks(comm_, algorithm_, arenas_.state, arenas_.state_count); }

}  // namespace ts
