// Sgd (momentum, Nesterov, weight decay) against hand-computed values, and LrSchedule values
// for warm-up, step and cosine.
#include <gtest/gtest.h>

#include <cmath>
#include <numbers>

#include "backend/backend.h"
#include "backend/backend_factory.h"
#include "core/error.h"
#include "nn/lr_schedule.h"
#include "nn/optimizer.h"

namespace ts {
namespace {

class SgdTest : public ::testing::TestWithParam<std::string> {};

TEST_P(SgdTest, PlainSgd) {
  auto backend = make_backend(GetParam());
  Sgd sgd(*backend, 2, SgdOptions{});
  float w[2] = {1.0f, -2.0f};
  const float g[2] = {0.5f, 1.0f};
  sgd.step(w, g, 0.1);
  EXPECT_FLOAT_EQ(w[0], 0.95f);
  EXPECT_FLOAT_EQ(w[1], -2.1f);
}

TEST_P(SgdTest, MomentumAndWeightDecay) {
  auto backend = make_backend(GetParam());
  Sgd sgd(*backend, 1, SgdOptions{0.9, 0.01, false});
  float w = 1.0f;
  const float g = 0.5f;
  // step 1: g' = 0.5 + 0.01*1 = 0.51; v = 0.51; w = 1 - 0.1*0.51 = 0.949
  sgd.step(&w, &g, 0.1);
  EXPECT_NEAR(w, 0.949f, 1e-6);
  EXPECT_NEAR(sgd.velocity()[0], 0.51f, 1e-6);
  // step 2: g' = 0.5 + 0.00949 = 0.50949; v = 0.9*0.51 + 0.50949 = 0.96849; w = 0.949 - 0.096849
  sgd.step(&w, &g, 0.1);
  EXPECT_NEAR(sgd.velocity()[0], 0.96849f, 1e-6);
  EXPECT_NEAR(w, 0.852151f, 1e-6);
}

TEST_P(SgdTest, Nesterov) {
  auto backend = make_backend(GetParam());
  Sgd sgd(*backend, 1, SgdOptions{0.9, 0.0, true});
  float w = 1.0f;
  const float g = 1.0f;
  // step 1: v = 1; w -= 0.1 * (1 + 0.9*1) = 0.81
  sgd.step(&w, &g, 0.1);
  EXPECT_NEAR(w, 0.81f, 1e-6);
  // step 2: v = 0.9 + 1 = 1.9; w -= 0.1 * (1 + 0.9*1.9) = 0.271 -> 0.539
  sgd.step(&w, &g, 0.1);
  EXPECT_NEAR(w, 0.539f, 1e-6);
}

INSTANTIATE_TEST_SUITE_P(Backends, SgdTest, ::testing::Values("ref", "cpu"));

TEST(Sgd, BadOptions) {
  auto backend = make_backend("ref");
  EXPECT_THROW(Sgd(*backend, 1, SgdOptions{1.0, 0, false}), ConfigError);
  EXPECT_THROW(Sgd(*backend, 1, SgdOptions{0.9, -1, false}), ConfigError);
  EXPECT_THROW(Sgd(*backend, 1, SgdOptions{0.0, 0, true}), ConfigError);
}

TEST(LrSchedule, Constant) {
  LrSchedule s(0.1, LrScheduleOptions{}, 10, 100);
  EXPECT_DOUBLE_EQ(s.at(0), 0.1);
  EXPECT_DOUBLE_EQ(s.at(99), 0.1);
}

TEST(LrSchedule, WarmupIsLinearFromNearZero) {
  LrScheduleOptions o;
  o.warmup_epochs = 0.5;  // 5 steps of 10 per epoch
  LrSchedule s(1.0, o, 10, 100);
  EXPECT_DOUBLE_EQ(s.at(0), 0.2);
  EXPECT_DOUBLE_EQ(s.at(1), 0.4);
  EXPECT_DOUBLE_EQ(s.at(4), 1.0);
  EXPECT_DOUBLE_EQ(s.at(5), 1.0);
  EXPECT_DOUBLE_EQ(s.at(50), 1.0);
}

TEST(LrSchedule, StepDecay) {
  LrScheduleOptions o;
  o.kind = "step";
  o.step_epochs = 2;
  o.gamma = 0.5;
  LrSchedule s(0.8, o, 10, 100);
  EXPECT_DOUBLE_EQ(s.at(0), 0.8);
  EXPECT_DOUBLE_EQ(s.at(19), 0.8);
  EXPECT_DOUBLE_EQ(s.at(20), 0.4);
  EXPECT_DOUBLE_EQ(s.at(39), 0.4);
  EXPECT_DOUBLE_EQ(s.at(40), 0.2);
  EXPECT_DOUBLE_EQ(s.at(99), 0.8 * std::pow(0.5, 4));
}

TEST(LrSchedule, CosineWithWarmupAndFloor) {
  LrScheduleOptions o;
  o.kind = "cosine";
  o.warmup_epochs = 1;  // 10 steps
  o.final_lr_fraction = 0.1;
  LrSchedule s(1.0, o, 10, 110);
  EXPECT_DOUBLE_EQ(s.at(0), 0.1);
  EXPECT_DOUBLE_EQ(s.at(9), 1.0);
  EXPECT_DOUBLE_EQ(s.at(10), 1.0);                 // cosine starts at the peak
  EXPECT_NEAR(s.at(60), 0.1 + 0.9 * 0.5, 1e-12);    // half way
  EXPECT_NEAR(s.at(35), 0.1 + 0.9 * 0.5 * (1 + std::cos(std::numbers::pi * 0.25)), 1e-12);
  EXPECT_NEAR(s.at(110), 0.1, 1e-12);               // final
  EXPECT_NEAR(s.at(500), 0.1, 1e-12);               // held after the end
}

TEST(LrSchedule, UnknownKindListsAccepted) {
  LrScheduleOptions o;
  o.kind = "exponential";
  try {
    LrSchedule s(0.1, o, 10, 100);
    FAIL() << "expected ConfigError";
  } catch (const ConfigError& e) {
    std::string msg = e.what();
    EXPECT_NE(msg.find("exponential"), std::string::npos) << msg;
    EXPECT_NE(msg.find("constant, step, cosine"), std::string::npos) << msg;
  }
  LrScheduleOptions bad;
  bad.kind = "step";
  bad.step_epochs = 0;
  EXPECT_THROW(LrSchedule(0.1, bad, 10, 100), ConfigError);
  EXPECT_THROW(LrSchedule(0.1, LrScheduleOptions{}, 0, 100), ConfigError);
}

}  // namespace
}  // namespace ts
