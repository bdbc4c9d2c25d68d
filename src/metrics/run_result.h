// Everything one run produces, in memory, before metrics/run_file writes it as an HDF5 file
// of schema trainscale-run/1 (see docs/hdf5-schema.md). Only metrics/ opens HDF5 for writing.
#pragma once

#include <cstdint>
#include <map>
#include <string>
#include <vector>

namespace ts {

struct RunResult {
  // Root attributes (strings unless noted).
  std::map<std::string, std::string> attrs;  // schema, run_id, config_id, campaign, status, ...
  int64_t world_size = 1;
  int64_t threads = 1;
  int64_t seed = 1;
  // /config: every resolved key flattened with dots, as text values ("0.05", "true", "ring").
  std::map<std::string, std::string> config;

  // /train/* [S]
  std::vector<int64_t> step, samples;
  std::vector<double> epoch, time;
  std::vector<float> loss, lr;
  // /timing/<phase> [S, R], row-major (step-major): timing[phase][s * R + r]
  std::map<std::string, std::vector<float>> timing;

  // /eval/* [E]
  std::vector<int64_t> eval_step;
  std::vector<double> eval_epoch, eval_time, eval_loss, eval_accuracy;

  // /summary attrs (float64, NaN where not applicable) and the diverged flag.
  std::map<std::string, double> summary;
  bool diverged = false;

  // /model
  std::string model_name;
  int64_t model_parameters = 0;
  int64_t model_flops_per_sample = 0;
  struct LayerRow {
    std::string name, kind, descriptor;
    int64_t parameters = 0, flops = 0;
  };
  std::vector<LayerRow> layers;
};

// Writes `result` to `path` atomically: to "<path>.tmp-<pid>", then renamed over `path`.
// Throws RuntimeError (naming the file and the failing HDF5 call) on failure.
// Throws before creating anything if the result's arrays disagree in length or the output
// directory does not exist or is not writable (the message names the directory).
void write_run_file(const std::string& path, const RunResult& result);

// The FAILED marker that goes next to a run file: "runs/abc-r0.h5" -> "runs/abc-r0.FAILED".
std::string failed_marker_path(const std::string& run_path);

}  // namespace ts
