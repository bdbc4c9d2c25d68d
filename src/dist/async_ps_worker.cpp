// async_ps on a worker (see async_ps_worker.h).
#include "dist/async_ps_worker.h"

#include <algorithm>
#include <cmath>
#include <string>

#include "core/error.h"
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

void AsyncPsWorkerExchange::begin_step(float local_loss, RangeUpdate update) {
  (void)update;  // the servers step the optimizer
  local_loss_ = local_loss;
}

void AsyncPsWorkerExchange::gradients_ready(int64_t offset, int64_t count) {
  (void)offset, (void)count;  // pushed whole after backward
}

StepVerdict AsyncPsWorkerExchange::finish_step(bool average_weights) {
  (void)average_weights;
  StepVerdict v;
  v.loss = local_loss_;
  const double t0 = MPI_Wtime();
  const bool final = clock_ + 1 >= options_.total_steps;
  const PsPushHeader push{static_cast<double>(PsMessage::push), static_cast<double>(clock_), final ? 1.0 : 0.0,
                          static_cast<double>(local_loss_)};
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
  double stalest = 0, held = 0;
  bool nonfinite = !std::isfinite(local_loss_);
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
  const PsPushHeader bye{static_cast<double>(PsMessage::leave), static_cast<double>(clock_), 0, 0};
  for (int s = 0; s < layout_.servers; ++s)
    TS_MPI(MPI_Send(&bye, kPsPushDoubles, MPI_DOUBLE, layout_.server_rank(s), kTagPsPush, mpi_comm(world_)));
}

}  // namespace ts
