// Per-worker shares of the global batch (dist/batch_partition.h): shares proportional to the
// measured speeds, in multiples of the quantum, at least one quantum each, always summing to
// the global batch; the equal split; offsets as prefix sums.
#include <gtest/gtest.h>

#include <cmath>
#include <limits>
#include <numeric>
#include <vector>

#include "dist/batch_partition.h"

using namespace ts;

namespace {

int64_t sum(const std::vector<int64_t>& v) { return std::accumulate(v.begin(), v.end(), int64_t{0}); }

}  // namespace

TEST(BatchPartition, SharesFollowTheSpeeds) {
  EXPECT_EQ(shares_by_speed({3.0, 1.0}, 128, 1), (std::vector<int64_t>{96, 32}));
  EXPECT_EQ(shares_by_speed({1.0, 3.0}, 128, 8), (std::vector<int64_t>{32, 96}));
  EXPECT_EQ(shares_by_speed({1.0, 1.0, 1.0, 1.0}, 64, 4), (std::vector<int64_t>{16, 16, 16, 16}));
  // A rank raised to its one quantum (ideal 6/7 of one) takes no remainder on top: the quantum
  // left goes to a fast rank (the lower of two ties).
  EXPECT_EQ(shares_by_speed({1.0, 3.0, 3.0}, 48, 8), (std::vector<int64_t>{8, 24, 16}));
  // Only the ratios count: samples/s of any magnitude.
  EXPECT_EQ(shares_by_speed({3000.0, 1000.0}, 128, 1), shares_by_speed({3e-3, 1e-3}, 128, 1));
}

TEST(BatchPartition, SharesAreQuantaThatSumToTheGlobalBatch) {
  const std::vector<std::vector<double>> speeds = {{1, 2, 3}, {5, 1, 1}, {1, 1, 1000}, {0.3, 0.3, 0.4}, {7, 11, 13}};
  for (const auto& s : speeds)
    for (int64_t quantum : {1, 3, 6}) {
      const std::vector<int64_t> shares = shares_by_speed(s, 96, quantum);
      ASSERT_EQ(shares.size(), s.size());
      EXPECT_EQ(sum(shares), 96);
      for (int64_t v : shares) {
        EXPECT_GE(v, quantum) << "every rank keeps a quantum, however slow";
        EXPECT_EQ(v % quantum, 0);
      }
      // A faster rank never gets less than a slower one.
      for (size_t a = 0; a < s.size(); ++a)
        for (size_t b = 0; b < s.size(); ++b)
          if (s[a] > s[b]) EXPECT_GE(shares[a], shares[b]);
    }
}

TEST(BatchPartition, UnmeasuredRanksCountAsTheSlowest) {
  const double nan = std::numeric_limits<double>::quiet_NaN();
  EXPECT_EQ(shares_by_speed({2.0, 0.0, 2.0}, 30, 1), shares_by_speed({2.0, 2.0, 2.0}, 30, 1));
  EXPECT_EQ(shares_by_speed({nan, 1.0, 3.0}, 50, 1), shares_by_speed({1.0, 1.0, 3.0}, 50, 1));
  EXPECT_EQ(sum(shares_by_speed({0.0, 0.0}, 10, 1)), 10);
}

TEST(BatchPartition, EqualSharesAndOffsets) {
  EXPECT_EQ(equal_shares(128, 2), (std::vector<int64_t>{64, 64}));
  EXPECT_EQ(equal_shares(10, 4), (std::vector<int64_t>{3, 3, 2, 2}));
  EXPECT_EQ(share_offsets({96, 32}), (std::vector<int64_t>{0, 96}));
  EXPECT_EQ(share_offsets({3, 3, 2, 2}), (std::vector<int64_t>{0, 3, 6, 8}));
  EXPECT_EQ(shares_text({96, 32}), "96,32");
  EXPECT_EQ(partition_kind_name(PartitionKind::static_), std::string("static"));
}
