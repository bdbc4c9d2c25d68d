// `async_ps` on a worker (docs/async.md): after backward,
// the worker pushes its gradient, one contiguous shard to each parameter server
// (dist/async_ps_layout.h), and waits for nothing but the servers' replies: each server applies
// the gradient to its shard at once and sends back its fresh weights as soon as the staleness
// bound allows (dist/ssp_clock.h), so a worker waits only when it is more than
// dist.staleness steps ahead of the slowest worker (or, on its last step, for every worker's
// last gradient, so all workers end with the same weights). The worker never steps its own
// optimizer: the update callback is unused. Host arenas only. No collective of the workers
// happens between steps (train/step_boundary.h agrees through server 0), only at evaluations
// and checkpoints. The message protocol is in
// dist/async_ps_messages.h; the server side in dist/async_ps_server.h.
#pragma once

#include <cstdint>
#include <vector>

#include "dist/async_ps_layout.h"
#include "dist/exchange_strategy.h"
#include "dist/message_boundary.h"
#include "dist/outside_peers.h"
#include "dist/remote_model.h"

namespace ts {

// What a worker's pushes met at the servers (the run file's /dist/async, docs/hdf5-schema.md).
struct AsyncPsRecord {
  // histogram[k]: this worker's gradients applied k rounds stale (k = 0 .. staleness); a
  // gradient counts at its stalest shard.
  std::vector<int64_t> staleness_histogram;
  // The stalest gradient's staleness before the histogram's last bin clamps it: the bound says
  // it never exceeds dist.staleness (tests/python/test_async_ps.py checks that it holds).
  int64_t max_staleness = 0;
  double bound_wait_s = 0;  // the servers held this worker's replies for the bound (the most over servers, summed over steps)
  double pull_wait_s = 0;   // this worker blocked on the push and the replies after backward
};

class AsyncPsWorkerExchange : public ExchangeStrategy,
                              public RemoteModel,
                              public MessageBoundary,
                              public OutsidePeers {
 public:
  // `comm`: the workers; options.async_ps.world: workers + servers.
  AsyncPsWorkerExchange(Communicator& comm, ModelArenas arenas, const ExchangeOptions& options);

  const char* name() const override { return "async_ps"; }
  ArenaTransport transport() const override { return ArenaTransport::host; }
  bool times_ps_phases() const override { return false; }
  // Every worker takes rank 0's model; rank 0 sends each server its shard and the run's plan.
  void broadcast_model() override;
  void begin_step(LocalLoss local_loss, RangeUpdate update) override;
  void gradients_ready(int64_t, int64_t) override {}  // pushed whole after backward
  // Push, then wait for the fresh weights. Diverged only on the last step (every worker's
  // last gradient has reached the servers then, so all workers agree): a non-finite loss on
  // any worker before it makes the whole run diverged.
  StepVerdict finish_step(bool average_weights) override;
  void average_state() override;
  const std::vector<Bucket>& buckets() const override { return shards_; }
  // A preempted worker (it stopped at an agreed step with a signal) says so as it leaves.
  void leave() override;

  // Checkpoints: the weights and momentum are the servers' (rank 0 takes and restores each
  // shard); the worker's own state is its step count and its record so far.
  void capture_model(std::vector<float>* params, std::vector<float>* velocity) override;
  void restore_model(const float* params, const float* velocity, int64_t steps_done) override;
  std::vector<float> checkpoint_state() const override;
  void restore_checkpoint_state(const std::vector<float>& state, int64_t steps_done) override;

  // Between steps the workers agree through server 0 (dist/boundary_arbiter.h).
  void request_boundary(const BoundaryRequest& request) override { request_ = request; }
  BoundaryAgreement agreed_boundary() const override { return agreed_; }

  const AsyncPsRecord& record() const { return record_; }

 private:
  Communicator& workers_;
  Communicator& world_;
  const ModelArenas arenas_;
  const AsyncPsOptions options_;
  AsyncPsLayout layout_;
  std::vector<Bucket> shards_;
  int64_t clock_ = 0;  // gradients pushed
  LocalLoss local_loss_{0.0f};
  bool left_ = false;
  BoundaryRequest request_;     // rides on the next push
  BoundaryAgreement agreed_;    // server 0's latest
  AsyncPsRecord record_;
};

}  // namespace ts
