// Weight averaging / local SGD (see weight_avg_strategy.h).
#include "dist/weight_avg_strategy.h"

#include <cmath>

#include "core/timer.h"

namespace ts {

WeightAveragingExchange::WeightAveragingExchange(Communicator& comm, ModelArenas arenas, const ExchangeOptions& options)
    : comm_(comm),
      arenas_(arenas),
      algorithm_(options.algorithm),
      plan_(BucketPlan::tile(arenas.param_count, options.bucket_elements)),
      staging_(plan_.tail() + arenas.state_count) {}

void WeightAveragingExchange::broadcast_model() {
  comm_.broadcast(arenas_.params, arenas_.param_count, 0);
  comm_.broadcast(arenas_.state, arenas_.state_count, 0);
}

void WeightAveragingExchange::begin_step(float local_loss, RangeUpdate update) {
  local_loss_ = local_loss;
  update_ = std::move(update);
  times_ = ExchangeTimes{};
}

// Parameters, state and the loss/flag averaged (summed) over ranks, blocking.
void WeightAveragingExchange::average_weights() {
  const double t0 = now_seconds();
  PsTimings ps_sum;
  auto reduce = [&](float* data, int64_t n, int64_t scaled) {
    PsTimings ps;
    allreduce_sum(comm_, algorithm_, data, n, &ps);
    ps_sum.gather_s += ps.gather_s;
    ps_sum.average_s += ps.average_s;
    ps_sum.broadcast_s += ps.broadcast_s;
    if (comm_.size() > 1) scale(data, scaled, 1.0f / static_cast<float>(comm_.size()));
  };
  for (size_t i = 0; i + 1 < plan_.buckets.size(); ++i)
    reduce(arenas_.params + plan_.buckets[i].first, plan_.buckets[i].second, plan_.buckets[i].second);
  const int64_t tail = plan_.tail();
  float* s = staging_.data();
  copy_floats(s, arenas_.params, tail);
  copy_floats(s + tail, arenas_.state, arenas_.state_count);
  staging_.set_extras(local_loss_, nonfinite_since_average_);
  reduce(s, staging_.size(), tail + arenas_.state_count);
  copy_floats(arenas_.params, s, tail);
  copy_floats(arenas_.state, s + tail, arenas_.state_count);
  nonfinite_since_average_ = 0;
  const double dt = now_seconds() - t0;
  times_.comm += dt;
  times_.comm_wait += dt;
  if (algorithm_ == AllreduceAlgorithm::ps) {
    times_.gather += ps_sum.gather_s;
    times_.average += ps_sum.average_s;
    times_.broadcast += ps_sum.broadcast_s;
  }
}

StepVerdict WeightAveragingExchange::finish_step(bool average_weights_now) {
  if (std::isfinite(local_loss_)) timed_update(update_, 0, arenas_.param_count, times_);
  else nonfinite_since_average_ += 1;
  StepVerdict v;
  if (average_weights_now) {
    average_weights();
    staging_.read_verdict(v, comm_.size());
  } else {
    v.loss = local_loss_;
  }
  v.times = times_;
  return v;
}

void WeightAveragingExchange::average_state() {
  average_over_ranks(comm_, algorithm_, arenas_.state, arenas_.state_count);
}

}  // namespace ts
