// Weight averaging / local SGD (see weight_avg_strategy.h).
#include "dist/weight_avg_strategy.h"

#include <cmath>

#include "core/error.h"
#include "core/timer.h"

namespace ts {

// The weights are averaged in the buckets of sync's plan.
WeightAveragingExchange::WeightAveragingExchange(Communicator& comm, ModelArenas arenas, const ExchangeOptions& options)
    : LinkedExchange(comm, arenas, BucketPlan::tile(arenas.param_count, options.bucket_elements), options, false),
      staging_(plan_.tail() + arenas.state_count) {}

// Parameters, state and the loss/flag averaged (summed) over ranks, blocking. Device arenas:
// after this step's update on the compute stream, which waits for the averages in turn.
void WeightAveragingExchange::average_weights() {
  const size_t updated = link_->now_mark();
  const double t_update = now_seconds();
  link_->wait(updated);  // device arenas: the update (and backward) run until here
  const double t0 = now_seconds();
  times_.optimizer += t0 - t_update;
  auto add = [this](const PsTimings& ps) {  // zeros unless the algorithm is ps
    times_.gather += ps.gather_s;
    times_.average += ps.average_s;
    times_.broadcast += ps.broadcast_s;
  };
  for (size_t i = 0; i + 1 < plan_.buckets.size(); ++i) {
    PsTimings ps;
    const double started = now_seconds();
    link_->average(comm_, algorithm_, Arena::params, plan_.buckets[i].first, plan_.buckets[i].second, updated, &ps);
    times_.buckets.push_back({started, now_seconds()});
    add(ps);
  }
  const double tail_started = now_seconds();  // the last bucket: the tail, the state, the loss
  const int64_t tail = plan_.tail();
  link_->pull(Arena::params, 0, tail, updated);
  link_->pull(Arena::state, 0, arenas_.state_count, updated);
  float* params = link_->host(Arena::params);
  float* state = link_->host(Arena::state);
  float* s = staging_.data();
  copy_floats(s, params, tail);
  copy_floats(s + tail, state, arenas_.state_count);
  staging_.set_extras(local_loss_.value(), nonfinite_since_average_);
  PsTimings ps;
  allreduce_sum(comm_, algorithm_, s, staging_.size(), &ps);
  add(ps);
  if (comm_.size() > 1) scale(s, tail + arenas_.state_count, 1.0f / static_cast<float>(comm_.size()));
  copy_floats(params, s, tail);
  copy_floats(state, s + tail, arenas_.state_count);
  link_->push(Arena::params, 0, tail);
  link_->push(Arena::state, 0, arenas_.state_count);
  link_->order_compute_after_pushes();
  times_.buckets.push_back({tail_started, now_seconds()});
  nonfinite_since_average_ = 0;
  const double dt = now_seconds() - t0;
  times_.comm += dt;
  times_.comm_wait += dt;
}

StepVerdict WeightAveragingExchange::finish_step(bool average_weights_now) {
  if (std::isfinite(local_loss_.value())) timed_update(update_, 0, arenas_.param_count, times_);
  else nonfinite_since_average_ += 1;
  StepVerdict v;
  if (average_weights_now) {
    average_weights();
    staging_.read_verdict(v, comm_.size());
  } else {
    v.loss = local_loss_.value();
  }
  v.times = times_;
  return v;
}

void WeightAveragingExchange::restore_checkpoint_state(const std::vector<float>& state, int64_t /*steps_done*/) {
  TS_CHECK(state.size() == 1, "weight_avg: a checkpoint holds " + std::to_string(state.size()) +
                                  " strategy values, 1 expected (the non-finite count)");
  nonfinite_since_average_ = state[0];
}

}  // namespace ts
