// Each bucket's exchange in time (issue 36): the bucket pipeline's spans (dist/bucket_pipeline.h),
// the bound on how many steps keep them (train/recording.h bucket_stride_for), /bucket_timing
// written and read back (metrics/run_result.h, metrics/run_file_view.h) and its trace events
// (metrics/trace_events.h).
#include <gtest/gtest.h>

#include <unistd.h>

#include <cmath>
#include <filesystem>
#include <limits>
#include <string>

#include "core/error.h"
#include "core/timer.h"
#include "dist/bucket_pipeline.h"
#include "metrics/run_file_view.h"
#include "metrics/run_result.h"
#include "metrics/trace_events.h"
#include "train/recording.h"

namespace fs = std::filesystem;
using namespace ts;

// Every bucket of a step has its span once complete() returns, inside the step, in every mode;
// where the caller's thread reduces them (eager, deferred) one after another in bucket order.
TEST(BucketTiming, ThePipelineTimesEveryBucketOfTheStep) {
  const BucketPlan plan = BucketPlan::tile(100, 30);
  for (PipelineMode mode : {PipelineMode::thread, PipelineMode::eager, PipelineMode::deferred}) {
    BucketPipeline pipeline(plan, 100, mode, [](size_t) {});
    for (int step = 0; step < 2; ++step) {
      const double before = now_seconds();
      pipeline.begin_step();
      pipeline.gradients_ready(60, 40);
      pipeline.gradients_ready(0, 60);
      pipeline.complete();
      const double after = now_seconds();
      const std::vector<BucketSpan>& spans = pipeline.bucket_spans();
      ASSERT_EQ(spans.size(), plan.buckets.size());
      for (size_t i = 0; i < spans.size(); ++i) {
        EXPECT_LE(before, spans[i].start) << "mode " << static_cast<int>(mode) << " bucket " << i;
        EXPECT_LE(spans[i].start, spans[i].end);
        EXPECT_LE(spans[i].end, after);
        if (i > 0 && mode != PipelineMode::thread) EXPECT_LE(spans[i - 1].end, spans[i].start);
      }
    }
  }
}

TEST(BucketTiming, LongRunsKeepEveryStrideThStepWithinTheBound) {
  EXPECT_EQ(bucket_stride_for(1000, 8, 4), 1);  // 32,000 spans: every step
  EXPECT_EQ(bucket_stride_for(10, 0, 1), 1);    // no buckets: counted as one
  for (const auto& [steps, buckets, world] : {std::tuple<int64_t, int64_t, int64_t>{1000000, 100, 64},
                                              {450000, 161, 8}, {int64_t{1} << 20, 1, 1}}) {
    const int64_t stride = bucket_stride_for(steps, buckets, world);
    const int64_t recorded = (steps + stride - 1) / stride;  // steps 1, 1 + stride, ...
    EXPECT_LE(recorded * buckets * world, kMaxBucketSpans + buckets * world) << steps << " " << stride;
    EXPECT_GT(recorded * 2 * buckets * world, kMaxBucketSpans) << "no coarser than it needs";
  }
}

namespace {

// 3 steps x 2 ranks; steps 1 and 3 recorded (stride 2) with 2 buckets, the second not exchanged
// by rank 1 in step 3 (NaN).
RunResult result_with_buckets() {
  RunResult r;
  r.record.run_id = "b-r1";
  r.record.world_size = 2;
  r.record.status = RunStatus::ok;
  r.step = {1, 2, 3};
  r.samples = {32, 64, 96};
  r.epoch = {0.1, 0.2, 0.3};
  r.time = {1, 2, 3};
  r.loss = {2.f, 1.5f, 1.f};
  r.lr = {0.05f, 0.05f, 0.05f};
  r.timing = {{"step", {1.f, 1.f, 1.f, 1.f, 1.f, 1.f}}};
  const float nan = std::numeric_limits<float>::quiet_NaN();
  r.bucket_step = {1, 3};
  r.bucket_count = 2;
  r.bucket_stride = 2;
  r.bucket_start = {0.25f, 0.5f, 0.125f, 0.5f, 0.25f, 0.5f, 0.25f, nan};  // [n][r][b]
  r.bucket_end = {0.5f, 0.75f, 0.25f, 0.625f, 0.5f, 0.75f, 0.375f, nan};
  return r;
}

}  // namespace

TEST(BucketTiming, TheRunFileKeepsThemAndTheTracePlacesThemInTheirStep) {
  const fs::path dir = fs::temp_directory_path() / ("ts_buckets_" + std::to_string(::getpid()));
  fs::create_directories(dir);
  const std::string path = (dir / "b-r1.h5").string();
  RunResult r = result_with_buckets();
  write_run_file(path, r);
  const RunFileView v = read_run_file_view(path);
  EXPECT_EQ(v.bucket_step, r.bucket_step);
  EXPECT_EQ(v.bucket_count, 2);
  ASSERT_EQ(v.bucket_start.size(), 8u);
  EXPECT_EQ(v.bucket_start[2], 0.125f);
  EXPECT_TRUE(std::isnan(v.bucket_end[7]));
  const std::string json = chrome_trace_json(v);
  // Step 3 (index 2) starts at 2 s on the training clock; rank 1's bucket 0 at 0.25 s into it.
  EXPECT_NE(json.find("{\"name\": \"bucket 0\", \"cat\": \"bucket\", \"ph\": \"X\", \"ts\": 2250000, \"dur\": 125000, "
                      "\"pid\": 1, \"tid\": 2, \"args\": {\"step\": 2, \"bucket\": 0}}"),
            std::string::npos)
      << json;
  EXPECT_EQ(json.find("\"args\": {\"step\": 2, \"bucket\": 1}}"), json.rfind("\"args\": {\"step\": 2, \"bucket\": 1}}"))
      << "rank 1 did not exchange bucket 1 in step 3: only rank 0's event";
  EXPECT_EQ(json.find("\"step\": 1, \"bucket\""), std::string::npos) << "step 2 was not recorded";
  EXPECT_NE(buckets_note(v).find("2 bucket(s)"), std::string::npos) << buckets_note(v);
  EXPECT_NE(buckets_note(v).find("in 2 recorded step(s) (one step in 2)"), std::string::npos) << buckets_note(v);

  r.bucket_end.pop_back();  // the writer refuses arrays that disagree, naming the group
  try {
    write_run_file((dir / "bad.h5").string(), r);
    FAIL() << "written";
  } catch (const RuntimeError& e) {
    EXPECT_NE(std::string(e.what()).find("/bucket_timing"), std::string::npos) << e.what();
  }
  EXPECT_FALSE(fs::exists(dir / "bad.h5"));
  fs::remove_all(dir);
}
