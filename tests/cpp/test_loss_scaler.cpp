// LossScaler: dynamic halving on overflow, doubling after growth_interval good steps, static
// and off modes, and the bounds of the scale.
#include <gtest/gtest.h>

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
