// A server rank of async_ps (see ps_server_loop.h).
#include "train/ps_server_loop.h"

#include <cstdio>
#include <ostream>
#include <string>

#include "backend/backend_factory.h"
#include "core/error.h"
#include "core/preemption_signal.h"
#include "dist/async_ps_server.h"
#include "nn/optimizer.h"
#include "train/learning_rate.h"

namespace ts {

void serve_async_ps(const ResolvedConfig& cfg, Communicator& world, std::ostream& log) {
  const RunConfig& r = cfg.run;
  std::unique_ptr<Backend> backend = make_backend(backend_kind_name(r.backend), 0);
  backend->set_threads(r.threads);
  AsyncPsServer server(world, r.workers, r.dist.staleness);
  const AsyncPsPlan& plan = server.plan();
  SgdOptions options;
  options.momentum = r.momentum;
  options.weight_decay = r.weight_decay;
  options.nesterov = r.nesterov;
  Sgd sgd(*backend, server.shard_count(), options);
  const LearningRate lr(r, plan.global_batch, plan.steps_per_epoch, plan.total_steps);
  // One push is one worker's share of a global step: lr / workers, so that a round of pushes
  // moves the weights as far as one synchronous step (weight decay included).
  const double share = 1.0 / static_cast<double>(r.workers);
  const AsyncPsServerStats stats = server.serve([&sgd, &lr, share](float* weights, const float* gradient,
                                                                    int64_t count, int64_t clock) {
    sgd.step_range(weights, gradient, lr.at(clock) * share, 0, count);
  }, sgd.velocity());
  char line[200];
  std::snprintf(line, sizeof line, "async_ps server %d: %lld pushes on %lld weights, %.3f s applying, %.3f s waiting\n",
                world.rank() - r.workers, static_cast<long long>(stats.pushes),
                static_cast<long long>(server.shard_count()), stats.apply_s, stats.receive_s);
  log << line;
  // The workers stopped at an agreed step for a preemption (rank 0 wrote the checkpoint and the
  // marker): this rank ends as they do.
  if (stats.preempted_by != 0)
    throw PreemptedError("async_ps server " + std::to_string(world.rank() - r.workers) + ": the workers stopped for " +
                         signal_name(stats.preempted_by));
}

}  // namespace ts
