// async_ps's worker and server over MPI (dist/async_ps_worker.h, dist/async_ps_server.h) under
// mpiexec on 2, 3 and 4 ranks (the last one or two ranks serve): on small-integer data whose
// float sums are exact, every worker ends with w0 - lr * steps * (sum of the workers'
// gradients), whatever the order the pushes arrive in; with staleness 0 also after every step;
// the staleness histogram counts every step, and within the bound. After 3 steps rank 0 takes
// every shard and its momentum (a checkpoint) and puts them back (a resume).
#include <gtest/gtest.h>

#include <numeric>
#include <vector>

#include "dist/async_ps_server.h"
#include "dist/async_ps_worker.h"
#include "dist/communicator.h"

#include "mpi_test_environment.h"

using namespace ts;

namespace {

constexpr int64_t kCount = 1001, kSteps = 6;
constexpr float kLr = 0.5f;

constexpr int64_t kCheckpointStep = 3;

// After kCheckpointStep steps of every worker: rank 0 takes every server's shard of the weights
// (the exact sum so far) and momentum (the server's world rank), then puts them back with the
// momentum 100 + that, as a resumed run would; the run goes on from there.
void checkpoint_and_restore(AsyncPsWorkerExchange& x, int me, int workers, int servers, float round) {
  std::vector<float> params, velocity;
  x.capture_model(me == 0 ? &params : nullptr, me == 0 ? &velocity : nullptr);
  if (me != 0) {
    x.restore_model(nullptr, nullptr, kCheckpointStep);
    return;
  }
  const AsyncPsLayout layout{workers, servers, kCount};
  ASSERT_EQ(params.size(), static_cast<size_t>(kCount));
  for (int s = 0; s < servers; ++s) {
    const Bucket shard = layout.shard(s);
    for (int64_t i = shard.first; i < shard.first + shard.second; ++i) {
      ASSERT_EQ(params[static_cast<size_t>(i)], static_cast<float>(i) - round * kCheckpointStep) << "element " << i;
      ASSERT_EQ(velocity[static_cast<size_t>(i)], static_cast<float>(layout.server_rank(s))) << "element " << i;
      velocity[static_cast<size_t>(i)] += 100.0f;
    }
  }
  x.restore_model(params.data(), velocity.data(), kCheckpointStep);
}

void run_async_ps(int64_t staleness) {
  auto world = Communicator::world();
  const int n = world->size(), servers = n >= 4 ? 2 : 1, workers = n - servers;
  const bool server = world->rank() >= workers;
  auto role = world->split(server ? 1 : 0);
  if (server) {
    AsyncPsServer s(*world, workers, staleness);
    EXPECT_EQ(s.plan().total_steps, kSteps);
    EXPECT_EQ(s.plan().param_count, kCount);
    // The momentum is the server's world rank until rank 0 restores it to 100 + that.
    std::vector<float> velocity(static_cast<size_t>(s.shard_count()), static_cast<float>(world->rank()));
    const AsyncPsServerStats stats = s.serve([](float* w, const float* g, int64_t count, int64_t clock, bool) {
      EXPECT_LT(clock, kSteps);
      for (int64_t i = 0; i < count; ++i) w[i] -= kLr * g[i];
    }, velocity.data());
    EXPECT_EQ(stats.pushes, workers * kSteps);
    EXPECT_EQ(stats.preempted_by, 0);
    for (float v : velocity) ASSERT_EQ(v, 100.0f + static_cast<float>(world->rank())) << "the restored momentum";
  } else {
    const int me = world->rank();
    std::vector<float> params(kCount, -1.0f), grads(kCount);
    if (me == 0) std::iota(params.begin(), params.end(), 0.0f);
    ExchangeOptions options;
    options.strategy = DistStrategy::async_ps;
    options.async_ps = {world.get(), servers, staleness, kSteps, 8, 100};
    AsyncPsWorkerExchange x(*role, {params.data(), grads.data(), kCount, nullptr, 0, {}}, options);
    x.broadcast_model();
    const float round = kLr * static_cast<float>(workers * (workers + 1) / 2);  // every worker's push once
    for (int64_t step = 0; step < kSteps; ++step) {
      std::fill(grads.begin(), grads.end(), static_cast<float>(me + 1));
      x.begin_step(1.0f, nullptr);
      const StepVerdict v = x.finish_step(true);
      EXPECT_FALSE(v.diverged);
      if (staleness == 0) {
        for (int64_t i = 0; i < kCount; i += 100)
          ASSERT_EQ(params[i], static_cast<float>(i) - round * static_cast<float>(step + 1))
              << "S=0 is bulk synchronous: step " << step << ", element " << i << ", worker " << me;
      }
      if (step == kCheckpointStep - 1) checkpoint_and_restore(x, me, workers, servers, round);
    }
    x.leave();
    for (int64_t i = 0; i < kCount; ++i)
      ASSERT_EQ(params[i], static_cast<float>(i) - round * kSteps) << "final weights, element " << i << ", worker " << me;
    const std::vector<int64_t>& hist = x.record().staleness_histogram;
    ASSERT_EQ(hist.size(), static_cast<size_t>(staleness + 1));
    EXPECT_EQ(std::accumulate(hist.begin(), hist.end(), int64_t{0}), kSteps);
    EXPECT_GT(x.record().pull_wait_s, 0.0);
  }
  world->barrier();
}

}  // namespace

TEST(AsyncPs, StalenessZeroIsBulkSynchronousAndEndsWithTheExactSum) { run_async_ps(0); }

TEST(AsyncPs, AStalenessBoundEndsWithTheSameWeights) { run_async_ps(2); }
