// A server rank of async_ps (see ps_server_loop.h).
#include "train/ps_server_loop.h"

#include <omp.h>

#include <cstdio>
#include <ostream>
#include <string>

#include "core/error.h"
#include "core/preemption_signal.h"
#include "dist/async_ps_server.h"
#include "train/push_sgd.h"

namespace ts {

void serve_async_ps(const ServeOptions& r, Communicator& world, std::ostream& log) {
  omp_set_num_threads(r.threads);
  AsyncPsServer server(world, r.workers, r.staleness);
  const AsyncPsPlan& plan = server.plan();
  // One push is one worker's share of a global step; the momentum decays once per step.
  PushSgd sgd(server.shard_count(), r.sgd, r.workers);
  const LearningRate lr(r.lr, plan.global_batch, plan.steps_per_epoch, plan.total_steps);
  const AsyncPsServerStats stats = server.serve(
      [&sgd, &lr](float* weights, const float* gradient, int64_t /*count*/, int64_t clock, bool first_of_step) {
        sgd.apply(weights, gradient, lr.at(clock), first_of_step);
      },
      sgd.velocity());
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
