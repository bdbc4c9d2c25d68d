// The stale-synchronous-parallel bound of an async_ps server (dist/ssp_clock.h): who may get
// fresh weights when, and how stale each applied gradient was.
#include <gtest/gtest.h>

#include <algorithm>
#include <vector>

#include "core/error.h"
#include "dist/ssp_clock.h"

using namespace ts;

TEST(SspClock, StalenessZeroIsBulkSynchronous) {
  SspClock c(3, 0);
  for (int round = 0; round < 4; ++round) {
    EXPECT_EQ(c.on_push(2, false), 0);
    EXPECT_TRUE(c.take_ready().empty()) << "worker 2 waits for the others' gradients of this step";
    EXPECT_EQ(c.on_push(0, false), 0);
    EXPECT_TRUE(c.take_ready().empty());
    EXPECT_EQ(c.on_push(1, false), 0);
    EXPECT_EQ(c.take_ready(), (std::vector<int>{0, 1, 2})) << "the round is complete: everybody goes on";
    EXPECT_EQ(c.round(), round + 1);
  }
}

TEST(SspClock, AFastWorkerRunsAtMostStalenessStepsAhead) {
  SspClock c(2, 2);
  // Worker 0 pushes while worker 1 stays at clock 0: replies for clocks 1 and 2 go at once
  // (round 0 >= clock - 2), the third waits.
  EXPECT_EQ(c.on_push(0, false), 0);
  EXPECT_EQ(c.take_ready(), std::vector<int>{0});
  EXPECT_EQ(c.on_push(0, false), 1) << "computed at clock 1 on the weights of round 0";
  EXPECT_EQ(c.take_ready(), std::vector<int>{0});
  EXPECT_EQ(c.on_push(0, false), 2);
  EXPECT_TRUE(c.take_ready().empty()) << "clock 3 is 3 steps ahead of worker 1";
  // Worker 1 computed on the initial weights at clock 0: fresh. Its push completes round 1.
  EXPECT_EQ(c.on_push(1, false), 0);
  EXPECT_EQ(c.take_ready(), (std::vector<int>{0, 1}));
  EXPECT_EQ(c.round(), 1);
  // Worker 1 catches up to round 2; worker 0 computed at clock 3 on the weights of round 1.
  EXPECT_EQ(c.on_push(1, false), 0);
  EXPECT_EQ(c.round(), 2);
  EXPECT_EQ(c.take_ready(), std::vector<int>{1});
  EXPECT_EQ(c.on_push(0, false), 2) << "its weights lacked worker 1's steps 2 and 3";
}

TEST(SspClock, StalenessIsHowFarAheadOfItsWeightsRoundAWorkerWas) {
  SspClock c(2, 3);
  EXPECT_EQ(c.on_push(1, false), 0);
  EXPECT_EQ(c.take_ready(), std::vector<int>{1});  // worker 1 has 1 step, its weights round 0
  for (int k = 0; k < 4; ++k) {  // worker 0 runs ahead; the round stops at 1 (worker 1's clock)
    EXPECT_EQ(c.on_push(0, false), std::max(0, k - 1)) << "push " << k + 1;
    EXPECT_EQ(c.take_ready(), std::vector<int>{0});
  }
  EXPECT_EQ(c.on_push(0, false), 3) << "at the bound";
  EXPECT_TRUE(c.take_ready().empty()) << "clock 5 waits for round 2";
  EXPECT_EQ(c.round(), 1);
  EXPECT_EQ(c.on_push(1, false), 1) << "worker 1 had 1 step when it got the weights of round 0";
  EXPECT_EQ(c.take_ready(), (std::vector<int>{0, 1}));
}

TEST(SspClock, AFinalPushWaitsForEveryWorkersLastGradient) {
  SspClock c(2, 5);
  EXPECT_EQ(c.on_push(0, true), 0);
  EXPECT_TRUE(c.take_ready().empty()) << "the final reply carries the final weights";
  EXPECT_EQ(c.on_push(1, true), 0);
  EXPECT_EQ(c.take_ready(), (std::vector<int>{0, 1}));
}

TEST(SspClock, AWorkerThatLeftHoldsNobodyBack) {
  SspClock c(3, 0);
  EXPECT_EQ(c.on_push(0, false), 0);
  EXPECT_EQ(c.on_push(1, false), 0);
  EXPECT_TRUE(c.take_ready().empty());
  c.on_leave(2);
  EXPECT_EQ(c.take_ready(), (std::vector<int>{0, 1}));
  EXPECT_FALSE(c.all_left());
  c.on_leave(0);
  c.on_leave(1);
  EXPECT_TRUE(c.all_left());
}

TEST(SspClock, ProtocolViolationsAreErrors) {
  SspClock c(2, 0);
  c.on_push(0, false);
  EXPECT_THROW(c.on_push(0, false), RuntimeError) << "a second push before the reply";
  EXPECT_THROW(c.on_push(2, false), RuntimeError) << "no such worker";
  c.on_leave(1);
  EXPECT_THROW(c.on_push(1, false), RuntimeError) << "a push after leaving";
  EXPECT_THROW(SspClock(0, 0), RuntimeError);
  EXPECT_THROW(SspClock(1, -1), RuntimeError);
}
