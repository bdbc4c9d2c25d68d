// `async_ps` on a server rank (docs/async.md): owns one
// contiguous shard of the weights (dist/async_ps_layout.h). It receives pushes from any worker
// (MPI_ANY_SOURCE) one at a time, applies each gradient with the caller's optimizer step at
// once, and sends a worker
// its fresh weights when the staleness bound allows (dist/ssp_clock.h). It never waits for a
// particular worker, only for the next push. train/ps_server_loop.h runs it with the run's Sgd
// and learning-rate schedule. Server 0 also arbitrates the step at which every worker acts on a
// preemption or a time-based checkpoint (dist/boundary_arbiter.h); at a checkpoint rank 0 takes
// each shard's weights and momentum, and a resumed run puts them back before the first push.
#pragma once

#include <cstdint>
#include <functional>
#include <vector>

#include "dist/async_ps_layout.h"
#include "dist/communicator.h"

namespace ts {

class SspClock;

// One optimizer update of the shard with one worker's gradient: weights and gradient hold
// `count` floats; `clock` is the pushing worker's step (0-based), which picks the learning
// rate; `first_of_step`: no push of this step or a later one was applied before (the momentum
// decays once per step, at its first push: train/ps_server_loop.h).
using PsApply =
    std::function<void(float* weights, const float* gradient, int64_t count, int64_t clock, bool first_of_step)>;

// What one server did (its log line).
struct AsyncPsServerStats {
  int64_t pushes = 0;
  int preempted_by = 0;  // the signal a worker left with after a preemption (0: none)
  double apply_s = 0;    // in the optimizer step
  double receive_s = 0;  // waiting for the next push
};

class AsyncPsServer {
 public:
  // Receives the plan and the shard's initial weights from rank 0 (AsyncPsWorkerExchange::broadcast_model).
  AsyncPsServer(Communicator& world, int workers, int64_t staleness);

  const AsyncPsPlan& plan() const { return plan_; }
  int64_t shard_count() const { return static_cast<int64_t>(weights_.size()); }
  // Serves pushes until every worker has left. `velocity`: the optimizer's momentum of the
  // shard (shard_count floats, host memory), which checkpoints take and resumes put back.
  AsyncPsServerStats serve(const PsApply& apply, float* velocity);

 private:
  // Rank 0's snapshot at a checkpoint: the shard's weights and momentum to rank 0.
  void send_snapshot(const float* velocity);
  // Rank 0's restore of a resumed run: the shard's weights and momentum from rank 0, `steps`
  // done by every worker; an empty answer once they are in place.
  void take_restore(float* velocity, int64_t steps, SspClock& ssp);

  Communicator& world_;
  AsyncPsLayout layout_;
  int64_t staleness_;
  AsyncPsPlan plan_;
  std::vector<float> weights_;
};

}  // namespace ts
