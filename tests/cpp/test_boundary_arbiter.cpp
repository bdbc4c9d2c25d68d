// Server 0's agreement on the step at which every async_ps worker acts on a preemption or a
// time-based checkpoint (dist/boundary_arbiter.h), driven as the server drives it with the
// stale-synchronous clock (dist/ssp_clock.h). No MPI.
#include <gtest/gtest.h>

#include <csignal>

#include "dist/boundary_arbiter.h"
#include "dist/ssp_clock.h"

using namespace ts;

TEST(BoundaryArbiter, NoRequestAgreesOnNothing) {
  BoundaryArbiter a;
  a.on_request({}, 5);
  EXPECT_EQ(a.current(3).step, 0);
}

TEST(BoundaryArbiter, TheAgreedStepIsOnePastTheNewestPushSoNoWorkerHasPassedIt) {
  SspClock clock(2, 3);
  BoundaryArbiter a;
  // Worker 0 runs 3 steps ahead of worker 1; worker 1 gets SIGTERM and asks with its push 1.
  for (int i = 0; i < 3; ++i) {
    clock.on_push(0, false);
    clock.take_ready();
  }
  clock.on_push(1, false);
  a.on_request({SIGTERM, false}, clock.newest());
  const BoundaryAgreement agreed = a.current(clock.round());
  EXPECT_EQ(agreed.step, 4) << "worker 0 has pushed 3: it learns at its push 4 and stops there";
  EXPECT_EQ(agreed.signal, SIGTERM);
  EXPECT_TRUE(agreed.checkpoint) << "a preemption checkpoints before it stops";
}

TEST(BoundaryArbiter, AnAgreementInForceIsKeptAndLastsUntilEveryWorkerPassedItsStep) {
  BoundaryArbiter a;
  a.on_request({0, true}, 7);
  a.on_request({SIGUSR1, false}, 8);  // a worker may already act on step 8's checkpoint
  BoundaryAgreement agreed = a.current(6);
  EXPECT_EQ(agreed.step, 8);
  EXPECT_EQ(agreed.signal, 0);
  EXPECT_TRUE(agreed.checkpoint);
  EXPECT_EQ(a.current(8).step, 8) << "every worker pushed 8, but the held replies may still carry it";
  EXPECT_EQ(a.current(9).step, 0) << "every worker pushed 9: each has had its reply for step 8";
  a.on_request({SIGUSR1, false}, 9);  // asked again with the next push
  agreed = a.current(9);
  EXPECT_EQ(agreed.step, 10);
  EXPECT_EQ(agreed.signal, SIGUSR1);
}

TEST(SspClock, AResumedClockStartsEveryWorkerAtTheCheckpointsStep) {
  SspClock c(2, 0);
  c.start_at(12);
  EXPECT_EQ(c.round(), 12);
  EXPECT_EQ(c.newest(), 12);
  EXPECT_EQ(c.on_push(0, false), 0);
  EXPECT_TRUE(c.take_ready().empty()) << "staleness 0: worker 0 waits for worker 1's step 13";
  EXPECT_EQ(c.on_push(1, false), 0) << "computed on the restored weights: fresh";
  EXPECT_EQ(c.take_ready(), (std::vector<int>{0, 1}));
  EXPECT_EQ(c.newest(), 13);
}
