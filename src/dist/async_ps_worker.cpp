// async_ps on a worker (see async_ps_worker.h).
#include "dist/async_ps_worker.h"

#include <algorithm>
#include <cmath>
#include <string>

#include "core/error.h"
#include "core/timer.h"
#include "dist/async_ps_messages.h"
#include "dist/mpi_comm.h"

namespace ts {
namespace {

int mpi_count(int64_t count) {
  TS_CHECK(count < kMpiMaxCount, "async_ps: a shard of " + std::to_string(count) +
                                     " floats exceeds one MPI message; use more dist.servers");
  return static_cast<int>(count);
}

}  // namespace

AsyncPsWorkerExchange::AsyncPsWorkerExchange(Communicator& comm, ModelArenas arenas, const ExchangeOptions& options)
    : workers_(comm), world_(options.async_ps.world ? *options.async_ps.world : comm), arenas_(arenas),
      options_(options.async_ps) {
  if (!arenas.device.host_accessible)
    throw ConfigError("dist.strategy: async_ps keeps the weights on the servers' host memory; use a CPU backend "
                      "(cpu or ref)");
  TS_CHECK(options.async_ps.world != nullptr, "async_ps: no world communicator with the servers was given");
  layout_ = {comm.size(), options_.servers, arenas.param_count};
  TS_CHECK(world_.size() == layout_.workers + layout_.servers,
           "async_ps: the world has " + std::to_string(world_.size()) + " ranks, not workers + servers");
  for (int s = 0; s < layout_.servers; ++s) shards_.push_back(layout_.shard(s));
  record_.staleness_histogram.assign(static_cast<size_t>(options_.staleness + 1), 0);
}

void AsyncPsWorkerExchange::broadcast_model() {
  workers_.broadcast(arenas_.params, arenas_.param_count, 0);
  if (arenas_.state_count > 0) workers_.broadcast(arenas_.state, arenas_.state_count, 0);
  if (workers_.rank() != 0) return;
  ExchangeGuard guard(watchdog_of(world_), "async_ps: sending the servers their shards");
  const int64_t plan[kPsPlanInts] = {arenas_.param_count, options_.total_steps, options_.global_batch,
                                     options_.steps_per_epoch};
  for (int s = 0; s < layout_.servers; ++s) {
    const Bucket shard = shards_[static_cast<size_t>(s)];
    TS_MPI(MPI_Send(plan, kPsPlanInts, MPI_INT64_T, layout_.server_rank(s), kTagPsPlan, mpi_comm(world_)));
    TS_MPI(MPI_Send(arenas_.params + shard.first, mpi_count(shard.second), MPI_FLOAT, layout_.server_rank(s),
                    kTagPsPlanData, mpi_comm(world_)));
  }
}

void AsyncPsWorkerExchange::begin_step(LocalLoss local_loss, RangeUpdate /*update: the servers step the optimizer*/) {
  local_loss_ = std::move(local_loss);
}

StepVerdict AsyncPsWorkerExchange::finish_step(bool /*average_weights*/) {
  StepVerdict v;
  v.loss = local_loss_.value();
  const double t0 = MPI_Wtime(), started = now_seconds();  // the latter on the trainer's clock
  const bool final = clock_ + 1 >= options_.total_steps;
  const PsPushHeader push{static_cast<double>(PsMessage::push), static_cast<double>(clock_), final ? 1.0 : 0.0,
                          static_cast<double>(local_loss_.value()), static_cast<double>(request_.signal),
                          request_.checkpoint ? 1.0 : 0.0};
  request_ = {};  // the step boundary asks again while it still needs to
  std::vector<PsReplyHeader> replies(static_cast<size_t>(layout_.servers));
  std::vector<MPI_Request> requests;
  const MPI_Comm mc = mpi_comm(world_);
  {
    ExchangeGuard guard(watchdog_of(world_), "async_ps: the push of a gradient and the pull of fresh weights");
    for (int s = 0; s < layout_.servers; ++s) {
      const Bucket shard = shards_[static_cast<size_t>(s)];
      const int server = layout_.server_rank(s), n = mpi_count(shard.second);
      requests.resize(requests.size() + 4);
      MPI_Request* r = &requests[requests.size() - 4];
      TS_MPI(MPI_Irecv(&replies[static_cast<size_t>(s)], kPsReplyDoubles, MPI_DOUBLE, server, kTagPsReply, mc, &r[0]));
      TS_MPI(MPI_Irecv(arenas_.params + shard.first, n, MPI_FLOAT, server, kTagPsReplyData, mc, &r[1]));
      TS_MPI(MPI_Isend(&push, kPsPushDoubles, MPI_DOUBLE, server, kTagPsPush, mc, &r[2]));
      TS_MPI(MPI_Isend(arenas_.grads + shard.first, n, MPI_FLOAT, server, kTagPsPushData, mc, &r[3]));
    }
    TS_MPI(MPI_Waitall(static_cast<int>(requests.size()), requests.data(), MPI_STATUSES_IGNORE));
  }
  ++clock_;
  const PsReplyHeader& arbiter = replies.front();  // server 0's agreement
  if (arbiter.agreed_step != 0)
    agreed_ = {static_cast<int64_t>(arbiter.agreed_step), static_cast<int>(arbiter.agreed_signal),
               arbiter.agreed_checkpoint != 0};
  double stalest = 0, held = 0;
  bool nonfinite = !std::isfinite(local_loss_.value());
  for (const PsReplyHeader& h : replies) {
    stalest = std::max(stalest, h.staleness);
    held = std::max(held, h.held_s);
    nonfinite = nonfinite || h.nonfinite != 0;
  }
  const size_t bin = std::min(record_.staleness_histogram.size() - 1, static_cast<size_t>(std::max(0.0, stalest)));
  ++record_.staleness_histogram[bin];
  record_.max_staleness = std::max(record_.max_staleness, static_cast<int64_t>(std::max(0.0, stalest)));
  record_.bound_wait_s += held;
  const double waited = MPI_Wtime() - t0;
  record_.pull_wait_s += waited;
  v.times.comm = waited;
  v.times.comm_wait = waited;
  v.times.buckets = {{started, now_seconds()}};  // the push and the pull: one exchange, no buckets
  v.diverged = final && nonfinite;
  return v;
}

void AsyncPsWorkerExchange::average_state() {
  if (arenas_.state_count == 0 || workers_.size() == 1) return;
  workers_.allreduce_sum(arenas_.state, arenas_.state_count);
  const float scale = 1.0f / static_cast<float>(workers_.size());
  for (int64_t i = 0; i < arenas_.state_count; ++i) arenas_.state[i] *= scale;
}

void AsyncPsWorkerExchange::leave() {
  if (left_) return;
  left_ = true;
  ExchangeGuard guard(watchdog_of(world_), "async_ps: telling the servers this worker is done");
  const int preempted_by = agreed_.step == clock_ ? agreed_.signal : 0;
  const PsPushHeader bye{static_cast<double>(PsMessage::leave), static_cast<double>(clock_), 0, 0,
                         static_cast<double>(preempted_by), 0};
  for (int s = 0; s < layout_.servers; ++s)
    TS_MPI(MPI_Send(&bye, kPsPushDoubles, MPI_DOUBLE, layout_.server_rank(s), kTagPsPush, mpi_comm(world_)));
}

void AsyncPsWorkerExchange::capture_model(std::vector<float>* params, std::vector<float>* velocity) {
  // Every worker has finished this step, so every server has applied every push up to it.
  workers_.barrier();
  if (workers_.rank() == 0) {
    TS_CHECK(params != nullptr && velocity != nullptr, "async_ps: rank 0 captures the model into nothing");
    params->resize(static_cast<size_t>(arenas_.param_count));
    velocity->resize(static_cast<size_t>(arenas_.param_count));
    ExchangeGuard guard(watchdog_of(world_), "async_ps: taking the servers' shards for a checkpoint");
    const PsPushHeader ask{static_cast<double>(PsMessage::snapshot), static_cast<double>(clock_), 0, 0, 0, 0};
    const MPI_Comm mc = mpi_comm(world_);
    for (int s = 0; s < layout_.servers; ++s) {
      const Bucket shard = shards_[static_cast<size_t>(s)];
      const int server = layout_.server_rank(s), n = mpi_count(shard.second);
      TS_MPI(MPI_Send(&ask, kPsPushDoubles, MPI_DOUBLE, server, kTagPsPush, mc));
      TS_MPI(MPI_Recv(params->data() + shard.first, n, MPI_FLOAT, server, kTagPsModelData, mc, MPI_STATUS_IGNORE));
      TS_MPI(MPI_Recv(velocity->data() + shard.first, n, MPI_FLOAT, server, kTagPsModelData, mc, MPI_STATUS_IGNORE));
    }
  }
  workers_.barrier();  // no worker pushes its next gradient before every shard is taken
}

void AsyncPsWorkerExchange::restore_model(const float* params, const float* velocity, int64_t steps_done) {
  clock_ = steps_done;
  if (workers_.rank() == 0) {
    ExchangeGuard guard(watchdog_of(world_), "async_ps: giving the servers their checkpointed shards");
    const PsPushHeader restore{static_cast<double>(PsMessage::restore), static_cast<double>(steps_done), 0, 0, 0, 0};
    const MPI_Comm mc = mpi_comm(world_);
    for (int s = 0; s < layout_.servers; ++s) {
      const Bucket shard = shards_[static_cast<size_t>(s)];
      const int server = layout_.server_rank(s), n = mpi_count(shard.second);
      TS_MPI(MPI_Send(&restore, kPsPushDoubles, MPI_DOUBLE, server, kTagPsPush, mc));
      TS_MPI(MPI_Send(params + shard.first, n, MPI_FLOAT, server, kTagPsModelData, mc));
      TS_MPI(MPI_Send(velocity + shard.first, n, MPI_FLOAT, server, kTagPsModelData, mc));
      TS_MPI(MPI_Recv(nullptr, 0, MPI_FLOAT, server, kTagPsModelData, mc, MPI_STATUS_IGNORE));  // in place
    }
  }
  workers_.barrier();  // no worker pushes before every server holds its shard again
}

// [max_staleness, bound_wait_s, pull_wait_s, histogram (staleness + 1)]: the record so far.
std::vector<float> AsyncPsWorkerExchange::checkpoint_state() const {
  std::vector<float> state = {static_cast<float>(record_.max_staleness), static_cast<float>(record_.bound_wait_s),
                              static_cast<float>(record_.pull_wait_s)};
  for (int64_t count : record_.staleness_histogram) state.push_back(static_cast<float>(count));
  return state;
}

void AsyncPsWorkerExchange::restore_checkpoint_state(const std::vector<float>& state, int64_t steps_done) {
  const size_t bins = record_.staleness_histogram.size();
  TS_CHECK(state.size() == 3 + bins, "checkpoint: the async_ps record holds " + std::to_string(state.size()) +
                                         " values, not 3 + " + std::to_string(bins) + " (another dist.staleness?)");
  record_.max_staleness = static_cast<int64_t>(state[0]);
  record_.bound_wait_s = state[1];
  record_.pull_wait_s = state[2];
  for (size_t k = 0; k < bins; ++k) record_.staleness_histogram[k] = static_cast<int64_t>(state[3 + k]);
  clock_ = steps_done;
}

}  // namespace ts
