// train-internal: a server rank of `dist.strategy: async_ps` (docs/async.md).
// The exchange-strategy step protocol is a worker's; a server
// trains nothing, so it runs this loop instead of the timed loop: the run's SGD (momentum,
// weight decay, Nesterov) over its shard, one update per push with the run's learning rate at
// the pushing worker's step, each push a worker's share of the step and the momentum decaying
// once per step (train/push_sgd.h), until every worker has left. It writes no run file; it
// logs one line. When the workers stopped for a preemption it throws PreemptedError after them
// (the same exit code on every rank).
#pragma once

#include <cstdint>
#include <iosfwd>

#include "dist/communicator.h"
#include "nn/optimizer.h"
#include "train/learning_rate.h"

namespace ts {

// What a server takes of the run's settings (packed by the trainer, train/phase_options.h).
struct ServeOptions {
  int threads = 2;         // the update's OpenMP threads
  int workers = 1;         // the world's first `workers` ranks; the servers follow
  int64_t staleness = 0;   // dist.staleness
  SgdOptions sgd;          // the run's momentum, weight decay, Nesterov
  LrOptions lr;            // the run's learning rate, at the pushing worker's step
};

// `world`: workers + servers; this rank is a server (rank >= options.workers).
void serve_async_ps(const ServeOptions& options, Communicator& world, std::ostream& log);

}  // namespace ts
