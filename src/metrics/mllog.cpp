// The MLPerf logging stream of a run file (see mllog.h).
#include "metrics/mllog.h"

#include <algorithm>
#include <cmath>
#include <cstdio>
#include <vector>

#include "core/error.h"
#include "core/strings.h"

namespace ts {
namespace {

class Stream {
 public:
  explicit Stream(std::string file) : file_(std::move(file)) {}

  // One line: value and metadata are JSON texts; `type` POINT_IN_TIME, INTERVAL_START, INTERVAL_END.
  void event(double unix_s, const char* type, const std::string& key, const std::string& value,
             const std::string& metadata = "") {
    char time_ms[48];
    std::snprintf(time_ms, sizeof time_ms, "%.3f", unix_s * 1000.0);
    text_ += ":::MLLOG {\"namespace\": \"\", \"time_ms\": " + std::string(time_ms) + ", \"event_type\": \"" + type +
             "\", \"key\": \"" + key + "\", \"value\": " + value + ", \"metadata\": {" + metadata +
             (metadata.empty() ? "" : ", ") + "\"file\": " + json_quote(file_) + ", \"lineno\": " +
             std::to_string(++lines_) + "}}\n";
  }
  void point(double t, const std::string& key, const std::string& value, const std::string& metadata = "") {
    event(t, "POINT_IN_TIME", key, value, metadata);
  }
  const std::string& text() const { return text_; }

 private:
  std::string file_, text_;
  int lines_ = 0;
};

std::string number(double v) { return json_number(v); }
std::string epoch_meta(const char* key, double epoch) { return std::string("\"") + key + "\": " + number(epoch); }

void require_wall_times(const RunFileView& run) {
  const auto missing = [&run](const std::string& what) {
    throw RuntimeError("run file " + run.path + ": " + what +
                       ", so its MLPerf log cannot be timed (files of trainscale before 0.1 lack wall times; a resumed "
                       "run lacks its earlier attempts')");
  };
  if (std::isnan(run.attribute_number("train_start_unix")) || std::isnan(run.attribute_number("setup_start_unix")))
    missing("the root attributes setup_start_unix / train_start_unix are missing or NaN");
  if (static_cast<int64_t>(run.wall_time.size()) != run.steps) missing("/train/wall_time is missing");
  for (double t : run.wall_time)
    if (std::isnan(t)) missing("steps have no wall time (/train/wall_time NaN)");
  if (run.eval_wall_time.size() != run.eval_step.size()) missing("/eval/wall_time is missing");
  for (double t : run.eval_wall_time)
    if (std::isnan(t)) missing("evaluations have no wall time (/eval/wall_time NaN)");
}

// Submission fields, cache_clear and the hyperparameters, at the set-up's start.
void describe_run(Stream& out, const RunFileView& run, double t) {
  const auto text = [](const std::string& s) { return json_quote(s); };
  // A number from /config as JSON: its text, or null where the file lacks the key.
  const auto cfg = [&run](const char* key) { return run.config_value(key, "null"); };
  out.point(t, "cache_clear", run.config_value("dataset.cache") == "cold" ? "true" : "false");
  out.event(t, "INTERVAL_START", "init_start", "null");
  out.point(t, "submission_org", text("trainscale"));
  out.point(t, "submission_platform", text(std::to_string(run.ranks) + "x" + run.attribute("device_name")));
  out.point(t, "submission_division", text("open"));
  out.point(t, "submission_status", text("research"));
  // The benchmark name MLPerf's rules know for a model of the zoo, else the model's own name
  // (which the rules' submission_benchmark check does not accept).
  out.point(t, "submission_benchmark", text(run.model_name == "resnet50" ? "resnet" : run.model_name));
  const int64_t global_batch = run.samples.empty() || run.step.empty() ? 0 : run.samples[0] / std::max<int64_t>(1, run.step[0]);
  out.point(t, "global_batch_size", std::to_string(global_batch));
  out.point(t, "gradient_accumulation_steps", "1");
  out.point(t, "train_samples", number(run.attribute_number("train_split_samples")));
  out.point(t, "eval_samples", number(run.attribute_number("eval_split_samples")));
  out.point(t, "seed", cfg("seed"));
  out.point(t, "opt_name", text("sgd"));
  out.point(t, "sgd_opt_base_learning_rate", cfg("lr"));
  out.point(t, "opt_learning_rate_warmup_epochs", cfg("lr_schedule.warmup_epochs"));
  out.point(t, "opt_learning_rate_decay_schedule", text(run.config_value("lr_schedule.kind")));
  out.point(t, "sgd_opt_momentum", cfg("momentum"));
  out.point(t, "sgd_opt_weight_decay", cfg("weight_decay"));
  out.point(t, "trainscale_run_id", text(run.attribute("run_id")));
  out.point(t, "trainscale_precision", text(run.attribute("precision")));
}

// The blocks between evaluations, each followed by its evaluation; returns the last event's time.
double blocks_and_evaluations(Stream& out, const RunFileView& run, double start) {
  double block_start = start, first_epoch = 0, end = start;
  int64_t first_sample = 0;
  const double samples_per_step = run.steps > 0 ? static_cast<double>(run.samples[0]) / static_cast<double>(run.step[0]) : 0;
  for (size_t e = 0; e < run.eval_step.size(); ++e) {
    const double epoch = run.eval_epoch[e];
    const auto index = static_cast<size_t>(std::max<int64_t>(0, run.eval_step[e] - run.step[0]));
    const double stop = run.wall_time.at(std::min(index, run.wall_time.size() - 1));
    const int64_t samples = static_cast<int64_t>(samples_per_step * static_cast<double>(run.eval_step[e])) - first_sample;
    const std::string block = epoch_meta("first_epoch_num", first_epoch) + ", " +
                              epoch_meta("epoch_count", std::max(epoch - first_epoch, 1e-9)) +
                              ", \"samples_count\": " + std::to_string(samples);
    out.event(block_start, "INTERVAL_START", "block_start", "null", block);
    out.event(stop, "INTERVAL_END", "block_stop", "null", block);
    const double eval_end = run.eval_wall_time[e] + run.eval_seconds[e];
    const std::string at = epoch_meta("epoch_num", epoch) + ", \"samples_count\": " +
                           std::to_string(first_sample + samples);
    out.event(run.eval_wall_time[e], "INTERVAL_START", "eval_start", "null", at);
    out.point(eval_end, "eval_accuracy", number(run.eval_accuracy[e]), at);
    out.event(eval_end, "INTERVAL_END", "eval_stop", "null", at);
    block_start = end = eval_end;
    first_epoch = epoch;
    first_sample += samples;
  }
  if (!run.wall_time.empty()) end = std::max(end, run.wall_time.back());
  return end;
}

}  // namespace

std::string mllog_text(const RunFileView& run) {
  require_wall_times(run);
  Stream out(run.attribute("run_id") + ".h5");
  describe_run(out, run, run.attribute_number("setup_start_unix"));
  const double start = run.attribute_number("train_start_unix");
  out.event(start, "INTERVAL_END", "init_stop", "null");
  out.event(start, "INTERVAL_START", "run_start", "null");
  const double end = blocks_and_evaluations(out, run, start);
  out.point(end, "tracked_stats", "{\"throughput\": " + number(run.summary_value("images_per_s")) + "}",
            "\"step\": " + std::to_string(run.step.empty() ? 0 : run.step.back()));
  const bool reached = std::isfinite(run.summary_value("time_to_target"));
  out.event(end, "INTERVAL_END", "run_stop", "null", std::string("\"status\": ") + (reached ? "\"success\"" : "\"aborted\""));
  return out.text();
}

}  // namespace ts
