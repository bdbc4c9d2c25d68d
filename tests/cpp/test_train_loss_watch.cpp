// The warnings of a run that measures something else than its author meant (docs/reliability.md
// "Warnings"): the loss watch (explosion, stall, diverge.loss_above_factor) and the warm-up
// longer than the run.
#include <gtest/gtest.h>

#include <cmath>
#include <sstream>

#include "config/run_config.h"
#include "train/loss_watch.h"
#include "train/progress.h"

namespace ts {
namespace {

TEST(LossWatch, AnExplosionIsWarnedOnceAgainstTheFirstStepsLoss) {
  LossWatch watch(0);
  watch.start(1, 2.3, true);
  EXPECT_TRUE(watch.observe(20, 22.0, true).warnings.empty()) << "below 10x the start";
  const LossWatch::Verdict v = watch.observe(40, 1e29, true);
  ASSERT_EQ(v.warnings.size(), 1u);
  EXPECT_NE(v.warnings[0].find("the loss exploded: 1e+29 at step 40 is above 10 x the loss at the start 2.3 (step 1)"),
            std::string::npos) << v.warnings[0];
  EXPECT_NE(v.warnings[0].find("diverge.loss_above_factor"), std::string::npos) << "says how to end such runs";
  EXPECT_EQ(v.diverged, "") << "unset bound: a warning only";
  EXPECT_TRUE(watch.observe(60, 1e30, true).warnings.empty()) << "each warning once";
}

TEST(LossWatch, TheBoundEndsTheRunOnlyOnLossesCombinedOverTheRanks) {
  LossWatch watch(5);
  watch.start(1, 2.0, true);
  EXPECT_EQ(watch.observe(20, 9.0, true).diverged, "");
  const std::string why = watch.observe(40, 12.5, true).diverged;
  EXPECT_EQ(why, "loss 12.5 at step 40 is above diverge.loss_above_factor 5 x the loss at the start 2 (step 1)");

  // A rank's own loss (weight_avg between averages) is no rank's verdict: a warning at most.
  LossWatch own(5);
  own.start(1, 2.0, false);
  const LossWatch::Verdict v = own.observe(20, 50.0, false);
  EXPECT_EQ(v.diverged, "");
  EXPECT_EQ(v.warnings.size(), 1u);
  // The bound's start is the first combined loss (the same on every rank).
  EXPECT_EQ(own.observe(40, 3.0, true).diverged, "");
  EXPECT_NE(own.observe(60, 16.0, true).diverged, "") << "16 > 5 x 3";
}

TEST(LossWatch, NonFiniteLossesAreTheDivergenceChecksNotTheWatchs) {
  LossWatch watch(2);
  watch.start(1, std::nan(""), true);
  const LossWatch::Verdict v = watch.observe(20, INFINITY, true);
  EXPECT_EQ(v.diverged, "");
  EXPECT_TRUE(v.warnings.empty());
  watch.observe(40, 2.3, true);  // the first finite loss is the start
  EXPECT_NE(watch.observe(60, 5.0, true).diverged, "");
}

TEST(LossWatch, ALossUnchangedOverSixProgressLinesIsAStall) {
  LossWatch watch(0);
  const double losses[] = {2.3026, 2.2981, 2.3092, 2.3007, 2.3050, 2.3061, 2.3010};
  std::vector<std::string> warnings;
  for (int i = 0; i < 7; ++i)
    for (const std::string& w : watch.observe(20 * (i + 1), losses[i], true).warnings) warnings.push_back(w);
  ASSERT_EQ(warnings.size(), 1u) << "warned once, at the sixth line";
  EXPECT_NE(warnings[0].find("the loss stalled: 2.298..2.309 (within 1% of 2.304) over 6 progress lines, steps 20..120"),
            std::string::npos) << warnings[0];
  EXPECT_NE(warnings[0].find("about ln(10)"), std::string::npos) << warnings[0];
}

TEST(LossWatch, ALossThatFallsOrReachesZeroIsNoStall) {
  LossWatch falling(0), zero(0);
  for (int i = 0; i < 20; ++i) {
    EXPECT_TRUE(falling.observe(i + 1, 2.3 * std::pow(0.95, i), true).warnings.empty()) << i;
    EXPECT_TRUE(zero.observe(i + 1, 0.0, true).warnings.empty()) << i;
  }
  // A plateau that moves by more than 1% between lines breaks the streak.
  LossWatch noisy(0);
  for (int i = 0; i < 20; ++i) EXPECT_TRUE(noisy.observe(i + 1, i % 2 ? 0.50 : 0.53, true).warnings.empty()) << i;
}

TEST(WarmupWarning, AWarmUpLongerThanTheRunIsNamedWithItsKeyAndBothStepCounts) {
  const ResolvedConfig cfg = parse_run_config("steps: 50\nlr_schedule: {warmup_epochs: 0.1}\n", "base.yaml", {});
  RunPlan plan;
  plan.steps_per_epoch = 1875;
  plan.total_steps = 50;
  const std::string w = warmup_warning(cfg, plan, 0.0013);
  EXPECT_NE(w.find("base.yaml:2: key 'lr_schedule.warmup_epochs': 0.1 epochs are 188 warm-up steps (1875 steps per "
                   "epoch), longer than this run's 50 steps"), std::string::npos) << w;
  EXPECT_NE(w.find("the run measures the warm-up only"), std::string::npos) << w;
  EXPECT_NE(w.find("this run's steps are 0.02667 epochs"), std::string::npos) << w;
  plan.total_steps = 188;  // the warm-up ends at the last step: no warning
  EXPECT_EQ(warmup_warning(cfg, plan, 0.01), "");
  EXPECT_EQ(warmup_warning(parse_run_config("steps: 5\n", "x.yaml", {}), plan, 0.01), "") << "no warm-up";
}

TEST(Warnings, OnlyRankZeroPrintsAndKeepsThem) {
  RunRecording root_rec, other_rec;
  std::ostringstream root_log, other_log;
  warn(root_log, root_rec, true, "the node is oversubscribed: ...");
  warn(other_log, other_rec, false, "the node is oversubscribed: ...");
  EXPECT_EQ(root_log.str(), "warning: the node is oversubscribed: ...\n");
  EXPECT_EQ(root_rec.warnings, (std::vector<std::string>{"the node is oversubscribed: ..."}));
  EXPECT_EQ(other_log.str(), "");
  EXPECT_TRUE(other_rec.warnings.empty());
}

}  // namespace
}  // namespace ts
