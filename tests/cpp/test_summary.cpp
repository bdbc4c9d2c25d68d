// Summary statistics of a run: warm-up exclusion, medians, percentiles, time to target.
#include <gtest/gtest.h>

#include <cmath>

#include "train/summary.h"

using namespace ts;

TEST(Summary, WarmupSteps) {
  EXPECT_EQ(warmup_steps_for(0), 0);
  EXPECT_EQ(warmup_steps_for(1), 0);
  EXPECT_EQ(warmup_steps_for(5), 1);
  EXPECT_EQ(warmup_steps_for(100), 10);
  EXPECT_EQ(warmup_steps_for(10000), 20);
}

TEST(Summary, Percentile) {
  EXPECT_DOUBLE_EQ(percentile({3, 1, 2}, 50), 2.0);
  EXPECT_DOUBLE_EQ(percentile({1, 2, 3, 4}, 50), 2.5);
  EXPECT_DOUBLE_EQ(percentile({1, 2, 3, 4, 5, 6, 7, 8, 9, 10, 11}, 90), 10.0);
  EXPECT_TRUE(std::isnan(percentile({}, 50)));
}

TEST(Summary, ThroughputExcludesWarmupAndUsesMedian) {
  SummaryInput in;
  // 20 steps: 2 warm-up steps are slow (excluded), then 0.1 s steps of 64 samples.
  in.step_time = {5.0, 5.0};
  for (int i = 0; i < 18; ++i) in.step_time.push_back(0.1);
  in.step_samples.assign(20, 64);
  in.loss.assign(20, 1.0f);
  in.loss[7] = 0.25f;
  in.loss.back() = 0.5f;
  in.world_size = 2;
  auto s = compute_summary(in);
  EXPECT_EQ(s["warmup_steps"], 2);
  EXPECT_NEAR(s["images_per_s"], 640.0, 1e-9);
  EXPECT_NEAR(s["images_per_s_per_worker"], 320.0, 1e-9);
  EXPECT_NEAR(s["step_time_median"], 0.1, 1e-12);
  EXPECT_NEAR(s["final_train_loss"], 0.5, 1e-7);
  EXPECT_NEAR(s["min_train_loss"], 0.25, 1e-7);
  EXPECT_EQ(s["diverged"], 0.0);
  EXPECT_TRUE(std::isnan(s["best_accuracy"]));
  EXPECT_TRUE(std::isnan(s["time_to_target"]));
}

TEST(Summary, TimeToTargetIsFirstEvalReachingIt) {
  SummaryInput in;
  in.step_time = {0.1};
  in.step_samples = {10};
  in.loss = {std::nanf("")};
  in.eval_time = {10, 20, 30};
  in.eval_accuracy = {0.85, 0.91, 0.90};
  in.target_accuracy = 0.9;
  in.diverged = true;
  auto s = compute_summary(in);
  EXPECT_DOUBLE_EQ(s["time_to_target"], 20);
  EXPECT_DOUBLE_EQ(s["best_accuracy"], 0.91);
  EXPECT_DOUBLE_EQ(s["final_accuracy"], 0.90);
  EXPECT_TRUE(std::isnan(s["min_train_loss"]));
  EXPECT_EQ(s["diverged"], 1.0);
}
