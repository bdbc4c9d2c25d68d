// Heterogeneous workers in the performance model (perfmodel/shares_model.h): the shares each
// partition gives and the slowdown per rank, against hand-computed values; measured shares are
// the trainer's rule applied to predicted speeds, adaptive ones its fixed point.
#include <gtest/gtest.h>

#include "core/error.h"
#include "dist/batch_partition.h"
#include "perfmodel/shares_model.h"

using namespace ts;
using namespace ts::perf;

namespace {

RunConfig two_workers(PartitionKind partition) {
  RunConfig c;
  c.workers = 2;
  c.global_batch = 128;
  c.dist.partition = partition;
  c.dist.emulate_slowdown_rank = 1;
  c.dist.emulate_slowdown_factor = 3.0;
  return c;
}

double linear(int64_t batch) { return 1e-3 * static_cast<double>(batch); }  // 1 ms per sample

}  // namespace

TEST(SharesModel, EqualAndStaticSharesWithASlowRank) {
  const RankLoads equal = rank_loads(two_workers(PartitionKind::equal), 2, linear);
  EXPECT_EQ(equal.shares, (std::vector<int64_t>{64, 64}));
  EXPECT_EQ(equal.slowdown, (std::vector<double>{1.0, 3.0}));
  RunConfig c = two_workers(PartitionKind::static_);
  c.dist.shares = {96, 32};
  EXPECT_EQ(rank_loads(c, 2, linear).shares, (std::vector<int64_t>{96, 32}));
  EXPECT_THROW(rank_loads(c, 4, linear), ConfigError);  // two shares for four workers
  // A slowed rank the worker count does not reach slows nobody.
  const RankLoads one = rank_loads(two_workers(PartitionKind::equal), 1, linear);
  EXPECT_EQ(one.shares, (std::vector<int64_t>{128}));
  EXPECT_EQ(one.slowdown, (std::vector<double>{1.0}));
}

TEST(SharesModel, MeasuredSharesFollowThePredictedSpeeds) {
  // 1 ms per sample, rank 1 three times slower: 1000 and 333 samples/s -> 96 : 32.
  EXPECT_EQ(rank_loads(two_workers(PartitionKind::measured), 2, linear).shares, (std::vector<int64_t>{96, 32}));
  RunConfig c = two_workers(PartitionKind::measured);
  c.dist.share_quantum = 16;
  EXPECT_EQ(rank_loads(c, 2, linear).shares, (std::vector<int64_t>{96, 32}));
  c.dist.share_quantum = 48;  // 128 is no multiple of it: refused, as the trainer refuses it
  EXPECT_THROW(rank_loads(c, 2, linear), ConfigError);
  c.dist.share_quantum = 32;  // 128 holds one quantum for each of 2 workers, not for 8
  EXPECT_EQ(rank_loads(c, 2, linear).shares, (std::vector<int64_t>{96, 32}));
  EXPECT_THROW(rank_loads(c, 8, linear), ConfigError);
}

TEST(SharesModel, AdaptiveSharesAreTheRulesFixedPoint) {
  // A fixed 20 ms per step besides 1 ms per sample: speeds measured at equal shares favour the
  // slow rank less than the speeds at the shares that result, so adaptive moves on from measured.
  auto overhead = [](int64_t batch) { return 0.02 + 1e-3 * static_cast<double>(batch); };
  const RankLoads measured = rank_loads(two_workers(PartitionKind::measured), 2, overhead);
  const RankLoads adaptive = rank_loads(two_workers(PartitionKind::adaptive), 2, overhead);
  EXPECT_NE(measured.shares, adaptive.shares);
  std::vector<double> speed;
  for (size_t r = 0; r < 2; ++r)
    speed.push_back(static_cast<double>(adaptive.shares[r]) / (overhead(adaptive.shares[r]) * adaptive.slowdown[r]));
  EXPECT_EQ(shares_by_speed(speed, 128, 1), adaptive.shares);
  EXPECT_EQ(adaptive.shares[0] + adaptive.shares[1], 128);
}
