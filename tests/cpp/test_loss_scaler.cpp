// LossScaler: dynamic halving on overflow, doubling after growth_interval good steps, static
// and off modes, the bounds of the scale, and the same decisions taken on the device
// (loss_reads: log) through the backend's defaults.
#include <gtest/gtest.h>

#include <limits>
#include <vector>

#include "backend/ref/ref_backend.h"
#include "config/run_config.h"
#include "train/loss_scaler.h"

namespace ts {
namespace {

TEST(LossScaler, DynamicHalvesOnOverflowAndDoublesAfterTheGrowthInterval) {
  LossScaler s(LossScaleMode::dynamic, 1024.0, 3);
  EXPECT_TRUE(s.enabled());
  s.update(false);
  EXPECT_EQ(s.scale(), 512.0f);
  EXPECT_EQ(s.skipped_steps(), 1);
  s.update(true);
  s.update(true);
  EXPECT_EQ(s.scale(), 512.0f);  // two good steps: not yet
  s.update(true);
  EXPECT_EQ(s.scale(), 1024.0f);
  s.update(true);
  s.update(false);  // an overflow resets the run of good steps
  s.update(true);
  s.update(true);
  EXPECT_EQ(s.scale(), 512.0f);
  s.update(true);
  EXPECT_EQ(s.scale(), 1024.0f);
  EXPECT_EQ(s.skipped_steps(), 2);
}

TEST(LossScaler, StaticKeepsItsScaleButCountsSkippedSteps) {
  LossScaler s(LossScaleMode::static_, 128.0, 1);
  for (int i = 0; i < 5; ++i) s.update(true);
  s.update(false);
  EXPECT_EQ(s.scale(), 128.0f);
  EXPECT_EQ(s.skipped_steps(), 1);
}

TEST(LossScaler, OffIsScaleOne) {
  LossScaler s(LossScaleMode::off, 65536.0, 2000);
  EXPECT_FALSE(s.enabled());
  EXPECT_EQ(s.scale(), 1.0f);
}

TEST(LossScaler, ScaleStaysWithinBounds) {
  LossScaler s(LossScaleMode::dynamic, 1.0, 1);
  for (int i = 0; i < 100; ++i) s.update(false);
  EXPECT_EQ(s.scale(), 1.0f / 16384.0f);
  for (int i = 0; i < 100; ++i) s.update(true);
  EXPECT_EQ(s.scale(), 16777216.0f);
}

// keep_on_device: the step queues the check, the update and the rule on the backend; read back,
// the state is the one the host's update() reaches with the same flags. Until then the host's
// copy is stale and refuses to be read.
TEST(LossScaler, OnTheDeviceItTakesTheHostsDecisions) {
  RefBackend backend;
  LossScaler on_host(LossScaleMode::dynamic, 1024.0, 2);
  LossScaler on_device(LossScaleMode::dynamic, 1024.0, 2);
  on_device.keep_on_device(backend);
  std::vector<float> grads(4);
  for (bool finite : {true, false, true, true, true, false, false, true}) {
    grads.assign(4, 2.0f);
    if (!finite) grads[1] = std::numeric_limits<float>::infinity();
    LossScaleState* state = on_device.device_state();
    on_device.device_ops().unscale_check(4, state, grads.data());
    on_device.device_ops().update_loss_scale(state, on_device.rule());
    on_host.update(finite);
    EXPECT_THROW(on_device.scale(), std::exception) << "stale until read_back";
    on_device.read_back();
    EXPECT_EQ(on_device.scale(), on_host.scale());
    EXPECT_EQ(on_device.good_steps(), on_host.good_steps());
    EXPECT_EQ(on_device.skipped_steps(), on_host.skipped_steps());
  }
  EXPECT_EQ(on_host.skipped_steps(), 3);
  EXPECT_THROW(on_device.update(true), std::exception) << "the host no longer decides";
}

TEST(LossScaler, AutoResolvesToDynamicForFp16Only) {
  RunConfig r;
  r.precision = Precision::fp16;
  EXPECT_EQ(r.effective_loss_scale(), LossScaleMode::dynamic);
  r.precision = Precision::bf16;
  EXPECT_EQ(r.effective_loss_scale(), LossScaleMode::off);
  r.loss_scale.mode = LossScaleMode::static_;
  EXPECT_EQ(r.effective_loss_scale(), LossScaleMode::static_);
}

}  // namespace
}  // namespace ts
