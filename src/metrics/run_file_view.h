// A run file read back whole for people and tools: `trainscale show` (summary, config, phases,
// ranks), `trainscale trace` (a timeline of the phases) and `show --mllog` (the MLPerf stream).
// Every value is checked by the reader (metrics/hdf5_reader.h): a damaged or foreign file is a
// RuntimeError naming the file and what was wrong. Optional groups may be absent (files of
// earlier versions, runs that had no such part): their members are then empty.
#pragma once

#include <cstdint>
#include <map>
#include <set>
#include <string>
#include <utility>
#include <vector>

namespace ts {

struct RunFileView {
  std::string path;
  // The root's attributes as text (integers and reals in their shortest form), by name.
  std::map<std::string, std::string> attributes;
  std::set<std::string> numeric_attributes;  // those of them that are integers or reals
  // /config: every resolved key, flattened with dots, as written.
  std::map<std::string, std::string> config;
  // /summary: the numeric attributes (NaN where not applicable) and the string ones (params_sha256).
  std::map<std::string, double> summary;
  std::map<std::string, std::string> summary_text;
  int64_t steps = 0, ranks = 0;  // S and R
  std::vector<std::string> rank_hosts, local_ranks;  // [R] (empty when the file has none)
  // /train [S]
  std::vector<int64_t> step, samples;
  std::vector<double> epoch, time;
  std::vector<float> loss, lr;
  std::vector<double> wall_time;  // /train/wall_time [S] (empty in files written before it existed)
  // /timing/<phase> [S, R] step-major, every phase the file holds.
  std::map<std::string, std::vector<float>> timing;
  // /bucket_timing (empty in files without it): the recorded steps [N] (numbers as /train/step),
  // each bucket's start and end [N, R, B] in seconds from the step's start on the rank's clock.
  std::vector<int64_t> bucket_step;
  std::vector<float> bucket_start, bucket_end;
  int64_t bucket_count = 0;  // B
  // /eval [E]
  std::vector<int64_t> eval_step;
  std::vector<double> eval_epoch, eval_time, eval_loss, eval_accuracy;
  std::vector<double> eval_wall_time, eval_seconds;  // empty in files written before they existed
  // /checkpoints [C] (empty: none, or a file written before it existed)
  std::vector<int64_t> checkpoint_step, checkpoint_bytes;
  std::vector<double> checkpoint_wall_time, checkpoint_seconds;
  // /utilisation [R] (empty in files written before it existed)
  std::vector<double> au, data_wait_share;
  // /model
  std::string model_name;
  int64_t model_parameters = 0, model_flops_per_sample = 0;

  // The root attribute `name`, or "" when the file has none.
  std::string attribute(const std::string& name) const;
  // The numeric root attribute `name`, NaN when the file has none.
  double attribute_number(const std::string& name) const;
  // The /config value of `key`, or `fallback` when the file has none.
  std::string config_value(const std::string& key, const std::string& fallback = "") const;
  // The /summary figure `name`, NaN when absent.
  double summary_value(const std::string& name) const;
  // The phases in the trainer's order (data_wait, forward, backward, comm, comm_wait, optimizer,
  // step, then the strategy's own), those the file holds.
  std::vector<std::string> phases() const;
};

RunFileView read_run_file_view(const std::string& path);

}  // namespace ts
