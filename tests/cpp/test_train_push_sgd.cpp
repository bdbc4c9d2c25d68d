// The optimizer of an async_ps server (train/push_sgd.h): a round of pushes, one per worker,
// each the first of its step or not, is one synchronous SGD step on the mean gradient, with
// momentum and with Nesterov (the reference: the ref backend's sgd_step); pushes of an older
// step add to the velocity without decaying it again.
#include <gtest/gtest.h>

#include <algorithm>
#include <cmath>
#include <vector>

#include "backend/ref/ref_kernels.h"
#include "train/push_sgd.h"

using namespace ts;

namespace {

constexpr int64_t kCount = 7;

// Three steps of `workers` pushes each with gradients (w + 1) * (i + 1) * step, through
// PushSgd and through sync SGD on the mean; both weight vectors start at 0.5 + i.
void expect_rounds_equal_sync(bool nesterov, int workers) {
  SgdOptions o;
  o.momentum = 0.9;
  o.nesterov = nesterov;
  PushSgd push(kCount, o, workers);
  std::vector<float> w(kCount), ws(kCount), vs(kCount, 0.0f), g(kCount), mean(kCount);
  for (int64_t i = 0; i < kCount; ++i) w[i] = ws[i] = 0.5f + static_cast<float>(i);
  const float lr = 0.05f;
  for (int step = 1; step <= 3; ++step) {
    std::fill(mean.begin(), mean.end(), 0.0f);
    for (int k = 0; k < workers; ++k) {
      for (int64_t i = 0; i < kCount; ++i) {
        g[i] = static_cast<float>((k + 1) * (i + 1) * step) * 0.25f;
        mean[i] += g[i] / static_cast<float>(workers);
      }
      push.apply(w.data(), g.data(), lr, k == 0);
    }
    ref::sgd_step(kCount, lr, 0.9f, 0.0f, nesterov, ws.data(), mean.data(), vs.data());
    for (int64_t i = 0; i < kCount; ++i) {
      EXPECT_NEAR(w[i], ws[i], 1e-5f * (1.0f + std::abs(ws[i]))) << "step " << step << ", element " << i;
      EXPECT_NEAR(push.velocity()[i], vs[i], 1e-5f * (1.0f + std::abs(vs[i]))) << "step " << step << ", element " << i;
    }
  }
}

}  // namespace

TEST(PushSgd, ARoundOfPushesIsOneSynchronousStepWithMomentum) {
  expect_rounds_equal_sync(false, 2);
  expect_rounds_equal_sync(false, 3);
}

TEST(PushSgd, ARoundOfPushesIsOneSynchronousNesterovStep) { expect_rounds_equal_sync(true, 2); }

TEST(PushSgd, AStalePushAddsWithoutDecayingAgain) {
  SgdOptions o;
  o.momentum = 0.5;
  PushSgd push(1, o, 2);
  float w = 0.0f;
  const float g = 2.0f;
  push.apply(&w, &g, 1.0, true);   // v = 1, w = -1
  push.apply(&w, &g, 1.0, true);   // a new step: w -= 0.5 * 1, v = 0.5, then v = 1.5, w -= 1
  push.apply(&w, &g, 1.0, false);  // a slow worker's push of the previous step: v = 2.5, w -= 1
  EXPECT_FLOAT_EQ(push.velocity()[0], 2.5f);
  EXPECT_FLOAT_EQ(w, -3.5f);
}
