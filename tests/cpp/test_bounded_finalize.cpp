// The deadline behind MpiSession's bounded MPI_Finalize (dist/bounded_finalize.h): a body that
// hangs past it ends the process with the given code and says so; one that returns in time
// leaves the process running.
#include <unistd.h>

#include <gtest/gtest.h>

#include "dist/bounded_finalize.h"

namespace {

TEST(BoundedFinalize, ABodyThatHangsPastTheDeadlineEndsTheProcessWithTheGivenCode) {
  EXPECT_EXIT(ts::run_with_deadline(1, 7, "the hanging body", "it sleeps", [] { sleep(30); }),
              testing::ExitedWithCode(7), "the hanging body did not return within 1 s \\(it sleeps\\); exiting with code 7");
}

TEST(BoundedFinalize, ABodyThatReturnsInTimeLeavesTheProcessRunning) {
  int ran = 0;
  ts::run_with_deadline(5, 7, "the quick body", "unused", [&ran] { ran = 1; });
  EXPECT_EQ(ran, 1);
}

}  // namespace
