// The run file read back whole (metrics/run_file_view.h), the accelerator utilisation of its
// phases (metrics/utilisation.h) and the Chrome trace placed from them (metrics/trace_events.h).
#include <gtest/gtest.h>

#include <unistd.h>

#include <cmath>
#include <filesystem>
#include <limits>
#include <string>

#include "core/error.h"
#include "metrics/run_file_view.h"
#include "metrics/run_result.h"
#include "metrics/trace_events.h"
#include "metrics/utilisation.h"

namespace fs = std::filesystem;
using namespace ts;

namespace {

// 3 steps x 2 ranks, step-major ([s * 2 + r]); binary fractions, so sums are exact.
std::map<std::string, std::vector<float>> sample_timing() {
  return {{"data_wait", {0.125f, 0.0f, 0.125f, 0.0f, 0.125f, 0.0f}},
          {"forward", {1.f, 1.f, 1.f, 1.f, 1.f, 1.f}},
          {"backward", {2.f, 2.f, 2.f, 2.f, 2.f, 2.f}},
          {"comm", {1.5f, 1.5f, 1.5f, 1.5f, 1.5f, 1.5f}},
          {"comm_wait", {0.5f, 1.f, 0.5f, 1.f, 0.5f, 1.f}},
          {"optimizer", {0.5f, 0.5f, 0.5f, 0.5f, 0.5f, 0.5f}},
          {"step", {5.f, 5.f, 5.f, 5.f, 5.f, 5.f}}};
}

}  // namespace

TEST(Utilisation, ComputeOverStepPerRankAfterWarmup) {
  auto timing = sample_timing();
  timing["step"][0] = 50.f;  // a slow first step of rank 0: warm-up, excluded with first_step 1
  auto ranks = rank_utilisation(timing, 2, 1);
  ASSERT_EQ(ranks.size(), 2u);
  EXPECT_NEAR(ranks[0].au, 3.5 / 5.0, 1e-6);
  EXPECT_NEAR(ranks[0].data_wait_share, 0.125 / 5.0, 1e-6);
  EXPECT_NEAR(ranks[1].data_wait_share, 0.0, 1e-12);
  EXPECT_NEAR(ranks[0].step_seconds, 10.0, 1e-6);
  const auto with_warmup = rank_utilisation(timing, 2, 0);
  EXPECT_LT(with_warmup[0].au, ranks[0].au);

  ranks[1].au = 0.6;
  const auto verdict = utilisation_summary(ranks, 0.65);
  EXPECT_NEAR(verdict.at("au_min"), 0.6, 1e-9);
  EXPECT_NEAR(verdict.at("au_mean"), 0.65, 1e-9);
  EXPECT_EQ(verdict.at("au_pass"), 0.0);  // 0.6 < 0.65: the least utilised rank decides
  EXPECT_EQ(utilisation_summary(ranks, 0.6).at("au_pass"), 1.0);
  EXPECT_TRUE(std::isnan(utilisation_summary(ranks, std::numeric_limits<double>::quiet_NaN()).at("au_pass")));
}

TEST(Utilisation, NoMeasuredStepIsNotANumber) {
  const auto ranks = rank_utilisation(sample_timing(), 2, 3);
  EXPECT_TRUE(std::isnan(ranks[0].au));
  EXPECT_TRUE(std::isnan(utilisation_summary(ranks, 0.5).at("au_min")));
  EXPECT_TRUE(std::isnan(utilisation_summary(ranks, 0.5).at("au_pass")));
}

TEST(RunFileView, ReadsBackWhatTheWriterWrote) {
  const fs::path dir = fs::temp_directory_path() / ("ts_view_" + std::to_string(::getpid()));
  fs::create_directories(dir);
  RunResult r;
  r.record.run_id = "x-r1";
  r.record.world_size = 2;
  r.record.rank_hosts = "n1,n2";
  r.record.local_ranks = "0,0";
  r.record.status = RunStatus::ok;
  r.config = {{"model", "lenet"}, {"lr", "0.05"}};
  r.step = {1, 2, 3};
  r.samples = {32, 64, 96};
  r.epoch = {0.1, 0.2, 0.3};
  r.time = {5, 10, 15};
  r.loss = {2.f, 1.5f, 1.f};
  r.lr = {0.05f, 0.05f, 0.05f};
  r.timing = sample_timing();
  r.summary = {{"images_per_s", 12.5}, {"warmup_steps", 1}};
  r.au = {0.7, 0.7};
  r.data_wait_share = {0.02, 0};
  r.au_threshold = 0.5;
  const std::string path = (dir / "x-r1.h5").string();
  write_run_file(path, r);
  const RunFileView v = read_run_file_view(path);
  EXPECT_EQ(v.attribute("run_id"), "x-r1");
  EXPECT_EQ(v.attribute("world_size"), "2");
  EXPECT_TRUE(v.numeric_attributes.count("world_size"));
  EXPECT_EQ(v.steps, 3);
  EXPECT_EQ(v.ranks, 2);
  EXPECT_EQ(v.rank_hosts, (std::vector<std::string>{"n1", "n2"}));
  EXPECT_EQ(v.config_value("lr"), "0.05");
  EXPECT_EQ(v.summary_value("images_per_s"), 12.5);
  EXPECT_TRUE(std::isnan(v.summary_value("best_accuracy")));  // written NaN by the writer
  EXPECT_EQ(v.au, r.au);
  EXPECT_EQ(v.timing.at("comm_wait"), r.timing.at("comm_wait"));
  EXPECT_EQ(v.phases(), (std::vector<std::string>{"data_wait", "forward", "backward", "comm", "comm_wait",
                                                  "optimizer", "step"}));
  fs::remove_all(dir);
  EXPECT_THROW(read_run_file_view(path), RuntimeError);
}

TEST(TraceEvents, PhasesKeepTheirDurationsInTheStepsOrder) {
  RunFileView v;
  v.ranks = 2;
  v.steps = 3;
  v.step = {1, 2, 3};
  v.time = {5, 10, 15};
  v.timing = sample_timing();
  v.rank_hosts = {"n1", "n2"};
  const std::string json = chrome_trace_json(v);
  // Step 2 (index 1) of rank 1 starts at rank 0's clock after step 1: 5 s.
  EXPECT_NE(json.find("\"name\": \"step 2\", \"cat\": \"step\", \"ph\": \"X\", \"ts\": 5000000, \"dur\": 5000000, "
                      "\"pid\": 1"),
            std::string::npos);
  // forward after data_wait (0 s on rank 1), backward after forward, then comm_wait and
  // optimizer at the step's end: comm_wait 1 s + optimizer 0.5 s end at 10 s.
  EXPECT_NE(json.find("\"name\": \"forward\", \"cat\": \"compute\", \"ph\": \"X\", \"ts\": 5000000, \"dur\": 1000000, \"pid\": 1"),
            std::string::npos);
  EXPECT_NE(json.find("\"name\": \"optimizer\", \"cat\": \"compute\", \"ph\": \"X\", \"ts\": 9500000, \"dur\": 500000, \"pid\": 1"),
            std::string::npos);
  // comm (1.5 s) on the communication thread ends where comm_wait ends (9.5 s).
  EXPECT_NE(json.find("\"name\": \"comm\", \"cat\": \"communication\", \"ph\": \"X\", \"ts\": 8000000, \"dur\": 1500000, "
                      "\"pid\": 1, \"tid\": 1"),
            std::string::npos);
  EXPECT_NE(json.find("\"name\": \"rank 1 (n2)\""), std::string::npos);
}
