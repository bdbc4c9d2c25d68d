// The checks of `trainscale bench allreduce` that need no second rank (dist/allreduce_bench.h):
// the #wrong column counts every element that differs from the exact sum, and the call-to-call
// spread is the min, max and sample standard deviation of the calls' times.
#include <gtest/gtest.h>

#include <cmath>
#include <vector>

#include "dist/allreduce_bench.h"

using namespace ts;

namespace {

// What a correct all-reduce of the check data over `ranks` ranks leaves in every buffer.
std::vector<float> exact_sum(int64_t count, int ranks) {
  std::vector<float> sum(static_cast<size_t>(count), 0.0f);
  for (int r = 0; r < ranks; ++r)
    for (int64_t i = 0; i < count; ++i) sum[static_cast<size_t>(i)] += allreduce_check_value(r, i);
  return sum;
}

}  // namespace

TEST(AllreduceBench, WrongElementsAreCountedAgainstTheExactSum) {
  for (int ranks : {1, 2, 3, 64}) {
    std::vector<float> data = exact_sum(1000, ranks);
    EXPECT_EQ(count_wrong_elements(data.data(), 1000, ranks), 0) << ranks;
    data[0] += 1.0f;                         // one element off by one
    data[999] = std::nanf("");               // one NaN
    data[500] = data[500] * (1 + 1e-6f);     // one off in the last bits
    EXPECT_EQ(count_wrong_elements(data.data(), 1000, ranks), 3) << ranks;
  }
  // A buffer left untouched (each rank's own values) is wrong wherever the other ranks add anything.
  std::vector<float> own(100);
  for (int64_t i = 0; i < 100; ++i) own[static_cast<size_t>(i)] = allreduce_check_value(0, i);
  int64_t nonzero_elsewhere = 0;
  for (int64_t i = 0; i < 100; ++i) nonzero_elsewhere += allreduce_check_value(1, i) != 0.0f;
  EXPECT_EQ(count_wrong_elements(own.data(), 100, 2), nonzero_elsewhere);
  EXPECT_GT(nonzero_elsewhere, 0);
}

TEST(AllreduceBench, CallSpreadIsMinMaxAndSampleStdev) {
  const CallSpread s = call_spread({2.0, 4.0, 4.0, 4.0, 5.0, 5.0, 7.0, 9.0});
  EXPECT_DOUBLE_EQ(s.min, 2.0);
  EXPECT_DOUBLE_EQ(s.max, 9.0);
  EXPECT_NEAR(s.stdev, std::sqrt(32.0 / 7.0), 1e-12);  // mean 5, squares 32, n - 1 = 7
  const CallSpread one = call_spread({3.0});
  EXPECT_DOUBLE_EQ(one.min, 3.0);
  EXPECT_DOUBLE_EQ(one.max, 3.0);
  EXPECT_DOUBLE_EQ(one.stdev, 0.0);
  const CallSpread none = call_spread({});
  EXPECT_DOUBLE_EQ(none.max, 0.0);
}
