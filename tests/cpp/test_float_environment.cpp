// Flushing denormal floats to zero (core/float_environment.h): on, a product below 1.2e-38 is
// 0 on the calling thread and on threads it starts afterwards; off, it is the denormal IEEE
// gradual underflow gives. The SGD momentum that decays into that range is what it is for.
#include <gtest/gtest.h>

#include <cmath>
#include <limits>
#include <thread>

#include "core/float_environment.h"

namespace {

// 1e-30f * 1e-10f = 1e-40, a denormal; volatile keeps the product at run time.
float tiny_product() {
  volatile float a = 1e-30f, b = 1e-10f;
  return a * b;
}

bool flushes_on_a_new_thread() {
  bool flushed = false;
  float product = 1;
  std::thread t([&] {
    flushed = ts::denormals_flushed();
    product = tiny_product();
  });
  t.join();
  return flushed && product == 0.0f;
}

}  // namespace

TEST(FloatEnvironment, FlushedDenormalsAreZeroHereAndOnThreadsStartedLater) {
#if !(defined(__x86_64__) || defined(__i386__))
  GTEST_SKIP() << "no MXCSR on this CPU: flush_denormals is a no-op here";
#endif
  ts::set_denormals_flushed(true);
  EXPECT_TRUE(ts::denormals_flushed());
  EXPECT_EQ(tiny_product(), 0.0f);
  EXPECT_TRUE(flushes_on_a_new_thread()) << "threads inherit the setting of the thread that starts them";

  ts::set_denormals_flushed(false);
  EXPECT_FALSE(ts::denormals_flushed());
  const float gradual = tiny_product();
  EXPECT_EQ(std::fpclassify(gradual), FP_SUBNORMAL) << gradual;
  EXPECT_GT(gradual, 0.0f);
  EXPECT_LT(gradual, std::numeric_limits<float>::min());
}
