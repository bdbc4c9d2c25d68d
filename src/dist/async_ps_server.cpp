// async_ps on a server (see async_ps_server.h).
#include "dist/async_ps_server.h"

#include <algorithm>
#include <cmath>
#include <string>

#include "core/error.h"
#include "dist/async_ps_messages.h"
#include "dist/boundary_arbiter.h"
#include "dist/mpi_comm.h"
#include "dist/ssp_clock.h"

namespace ts {
namespace {

// A reply in flight to one worker: its header and a copy of the weights it carries (the
// shard moves on while the send completes).
struct PendingReply {
  PsReplyHeader header;
  std::vector<float> weights;
  MPI_Request requests[2] = {MPI_REQUEST_NULL, MPI_REQUEST_NULL};
};

}  // namespace

AsyncPsServer::AsyncPsServer(Communicator& world, int workers, int64_t staleness)
    : world_(world), staleness_(staleness) {
  const int servers = world.size() - workers;
  TS_CHECK(workers >= 1 && servers >= 1 && world.rank() >= workers, "AsyncPsServer: not a server rank");
  ExchangeGuard guard(watchdog_of(world_), "async_ps: a server waiting for its shard from rank 0");
  int64_t plan[kPsPlanInts] = {};
  TS_MPI(MPI_Recv(plan, kPsPlanInts, MPI_INT64_T, 0, kTagPsPlan, mpi_comm(world_), MPI_STATUS_IGNORE));
  plan_ = {plan[0], plan[1], plan[2], plan[3]};
  layout_ = {workers, servers, plan_.param_count};
  const Bucket shard = layout_.shard(layout_.server_of(world.rank()));
  weights_.resize(static_cast<size_t>(shard.second));
  TS_MPI(MPI_Recv(weights_.data(), static_cast<int>(shard.second), MPI_FLOAT, 0, kTagPsPlanData, mpi_comm(world_),
                  MPI_STATUS_IGNORE));
}

void AsyncPsServer::send_snapshot(const float* velocity) {
  const int n = static_cast<int>(weights_.size());
  ExchangeGuard guard(watchdog_of(world_), "async_ps: a server sending its shard to rank 0 (checkpoint)");
  TS_MPI(MPI_Send(weights_.data(), n, MPI_FLOAT, 0, kTagPsModelData, mpi_comm(world_)));
  TS_MPI(MPI_Send(velocity, n, MPI_FLOAT, 0, kTagPsModelData, mpi_comm(world_)));
}

void AsyncPsServer::take_restore(float* velocity, int64_t steps, SspClock& ssp) {
  const int n = static_cast<int>(weights_.size());
  const MPI_Comm mc = mpi_comm(world_);
  ExchangeGuard guard(watchdog_of(world_), "async_ps: a server taking its checkpointed shard from rank 0");
  TS_MPI(MPI_Recv(weights_.data(), n, MPI_FLOAT, 0, kTagPsModelData, mc, MPI_STATUS_IGNORE));
  TS_MPI(MPI_Recv(velocity, n, MPI_FLOAT, 0, kTagPsModelData, mc, MPI_STATUS_IGNORE));
  ssp.start_at(steps);
  TS_MPI(MPI_Send(nullptr, 0, MPI_FLOAT, 0, kTagPsModelData, mc));  // in place: the workers may push
}

AsyncPsServerStats AsyncPsServer::serve(const PsApply& apply, float* velocity) {
  const int workers = layout_.workers;
  const int n = static_cast<int>(weights_.size());
  const MPI_Comm mc = mpi_comm(world_);
  const bool arbitrates = layout_.server_of(world_.rank()) == 0;
  SspClock clock(workers, staleness_);
  BoundaryArbiter arbiter;
  int64_t newest_applied = -1;  // the highest step (clock) of a push applied so far
  std::vector<float> gradient(weights_.size());
  std::vector<PendingReply> replies(static_cast<size_t>(workers));
  std::vector<int64_t> staleness(static_cast<size_t>(workers), 0);
  std::vector<double> applied_at(static_cast<size_t>(workers), 0);
  bool nonfinite = false;
  AsyncPsServerStats stats;
  while (!clock.all_left()) {
    PsPushHeader push;
    MPI_Status status;
    const double t0 = MPI_Wtime();
    {
      ExchangeGuard guard(watchdog_of(world_), "async_ps: a server waiting for the next push");
      TS_MPI(MPI_Recv(&push, kPsPushDoubles, MPI_DOUBLE, MPI_ANY_SOURCE, kTagPsPush, mc, &status));
      const int w = status.MPI_SOURCE;
      TS_CHECK(w >= 0 && w < workers, "async_ps: a push from rank " + std::to_string(w) + ", which is no worker");
      if (push.kind == static_cast<double>(PsMessage::push))
        TS_MPI(MPI_Recv(gradient.data(), n, MPI_FLOAT, w, kTagPsPushData, mc, MPI_STATUS_IGNORE));
    }
    const int w = status.MPI_SOURCE;
    const double t1 = MPI_Wtime();
    stats.receive_s += t1 - t0;
    const auto kind = static_cast<PsMessage>(static_cast<int>(push.kind));
    if (kind == PsMessage::snapshot || kind == PsMessage::restore) {
      TS_CHECK(w == 0, "async_ps: a checkpoint message from worker " + std::to_string(w) + ", not rank 0");
      if (kind == PsMessage::snapshot) {
        send_snapshot(velocity);
      } else {
        take_restore(velocity, static_cast<int64_t>(push.clock), clock);
        newest_applied = static_cast<int64_t>(push.clock) - 1;  // every step before was applied
      }
      continue;
    }
    if (kind == PsMessage::leave) {
      clock.on_leave(w);
      stats.preempted_by = std::max(stats.preempted_by, static_cast<int>(push.signal));
    } else {
      nonfinite = nonfinite || !std::isfinite(push.loss);
      staleness[static_cast<size_t>(w)] = clock.on_push(w, push.final != 0);
      if (arbitrates) arbiter.on_request({static_cast<int>(push.signal), push.checkpoint != 0}, clock.newest());
      const int64_t step = static_cast<int64_t>(push.clock);
      apply(weights_.data(), gradient.data(), static_cast<int64_t>(n), step, step > newest_applied);
      newest_applied = std::max(newest_applied, step);
      applied_at[static_cast<size_t>(w)] = MPI_Wtime();
      stats.apply_s += applied_at[static_cast<size_t>(w)] - t1;
      ++stats.pushes;
    }
    for (int ready : clock.take_ready()) {
      PendingReply& r = replies[static_cast<size_t>(ready)];
      {
        ExchangeGuard guard(watchdog_of(world_), "async_ps: a server's previous reply to a worker");
        TS_MPI(MPI_Waitall(2, r.requests, MPI_STATUSES_IGNORE));
      }
      const BoundaryAgreement agreed = arbitrates ? arbiter.current(clock.round()) : BoundaryAgreement{};
      r.header = {static_cast<double>(staleness[static_cast<size_t>(ready)]),
                  MPI_Wtime() - applied_at[static_cast<size_t>(ready)],
                  nonfinite ? 1.0 : 0.0,
                  static_cast<double>(agreed.step),
                  static_cast<double>(agreed.signal),
                  agreed.checkpoint ? 1.0 : 0.0};
      r.weights = weights_;
      TS_MPI(MPI_Isend(&r.header, kPsReplyDoubles, MPI_DOUBLE, ready, kTagPsReply, mc, &r.requests[0]));
      TS_MPI(MPI_Isend(r.weights.data(), n, MPI_FLOAT, ready, kTagPsReplyData, mc, &r.requests[1]));
    }
  }
  ExchangeGuard guard(watchdog_of(world_), "async_ps: a server's last replies");
  for (PendingReply& r : replies) TS_MPI(MPI_Waitall(2, r.requests, MPI_STATUSES_IGNORE));
  return stats;
}

}  // namespace ts
