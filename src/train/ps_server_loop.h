// train-internal: a server rank of `dist.strategy: async_ps` (docs/async.md).
// The exchange-strategy step protocol is a worker's; a server
// trains nothing, so it runs this loop instead of the timed loop: the run's SGD (momentum,
// weight decay, Nesterov) over its shard, one update per push with the run's learning rate at
// the pushing worker's step, each push a worker's share of the step and the momentum decaying
// once per step (train/push_sgd.h), until every worker has left. It writes no run file; it
// logs one line. When the workers stopped for a preemption it throws PreemptedError after them
// (the same exit code on every rank).
#pragma once

#include <iosfwd>

#include "config/run_config.h"
#include "dist/communicator.h"

namespace ts {

// `world`: workers + servers; this rank is a server (rank >= cfg.run.workers).
void serve_async_ps(const ResolvedConfig& cfg, Communicator& world, std::ostream& log);

}  // namespace ts
