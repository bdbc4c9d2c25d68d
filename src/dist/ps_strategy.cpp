// The parameter server (see ps_strategy.h).
#include "dist/ps_strategy.h"

#include <algorithm>
#include <cmath>

#include "core/timer.h"

namespace ts {
namespace {

// MPI counts are int: a gathered bucket (world x bucket floats) must stay below 2^30.
constexpr int64_t kMaxGatherFloats = (int64_t{1} << 30) - 1;
constexpr int64_t kExtras = 2;  // the verdict floats after the staged tail

BucketPlan ps_plan(int64_t param_count, int64_t bucket_elements, int world) {
  return BucketPlan::tile(param_count, std::min(std::max<int64_t>(1, bucket_elements), kMaxGatherFloats / world - kExtras));
}

}  // namespace

ParameterServerExchange::ParameterServerExchange(Communicator& comm, ModelArenas arenas, const ExchangeOptions& options)
    : PipelinedExchange(comm, arenas, ps_plan(arenas.param_count, options.bucket_elements, comm.size()), options),
      staging_(plan_.tail()) {
  if (comm.rank() == 0) gathered_.resize(static_cast<size_t>((plan_.largest() + kExtras) * comm.size()));
}

// Gathers one gradient bucket to rank 0, which sums it in rank order and scales it to the mean
// (the loss stays a sum). Other ranks keep their own gradients. Device arenas: the bucket is
// pulled to the host mirror and rank 0 pushes the mean back for its update.
void ParameterServerExchange::reduce_bucket(size_t i) {
  const auto [offset, count] = plan_.buckets[i];
  const bool last = i + 1 == plan_.buckets.size();
  link_->wait(i);  // device arenas: backward up to this bucket is compute, not communication
  const double t0 = now_seconds();
  link_->pull(Arena::grads, offset, count, i);
  float* data = link_->host(Arena::grads) + offset;
  int64_t n = count;
  if (last) {
    copy_floats(staging_.data(), data, count);
    staging_.set_loss(local_loss_.value());
    data = staging_.data();
    n = staging_.size();
  }
  comm_.gather_to_root(data, n, gathered_.data());
  const double t1 = now_seconds();
  times_.gather += t1 - t0;
  times_.comm += t1 - t0;
  if (comm_.rank() != 0) return;
  for (int q = 1; q < comm_.size(); ++q) {
    add_into(data, gathered_.data() + static_cast<int64_t>(q) * n, n);
  }
  if (comm_.size() > 1) scale(data, count, 1.0f / static_cast<float>(comm_.size()));
  if (last) copy_floats(link_->host(Arena::grads) + offset, staging_.data(), count);
  link_->push(Arena::grads, offset, count);
  times_.average += now_seconds() - t1;
}

// Rank 0's weights (and, with the last bucket, the summed loss and flag) to every rank. Device
// arenas: after rank 0's update on its compute stream.
void ParameterServerExchange::broadcast_weights() {
  const size_t updated = link_->now_mark();
  const double t_update = now_seconds();
  link_->wait(updated);  // device arenas: rank 0's update runs until here
  const double t0 = now_seconds();
  if (comm_.rank() == 0) times_.optimizer += t0 - t_update;  // no other rank runs the optimizer
  for (size_t i = 0; i < plan_.buckets.size(); ++i) {
    const auto [offset, count] = plan_.buckets[i];
    if (i + 1 < plan_.buckets.size()) {
      link_->broadcast(comm_, Arena::params, offset, count, 0, updated);
      continue;
    }
    const bool root = comm_.rank() == 0;
    if (root) link_->pull(Arena::params, offset, count, updated);
    float* params = link_->host(Arena::params) + offset;
    copy_floats(staging_.data(), params, count);
    comm_.broadcast(staging_.data(), staging_.size(), 0);
    copy_floats(params, staging_.data(), count);
    if (!root) link_->push(Arena::params, offset, count);
  }
  link_->order_compute_after_pushes();
  const double dt = now_seconds() - t0;
  times_.broadcast += dt;
  times_.comm += dt;
  times_.comm_wait += dt;
}

StepVerdict ParameterServerExchange::finish_step(bool /*average_weights: every step exchanges*/) {
  complete_buckets(true);
  StepVerdict v;
  staging_.read_verdict(v, comm_.size());  // meaningful on rank 0 only until the broadcast
  if (comm_.rank() == 0 && !v.diverged) timed_update(update_, 0, arenas_.param_count, times_);
  broadcast_weights();
  staging_.read_verdict(v, comm_.size());
  v.times = times_;
  return v;
}

}  // namespace ts
