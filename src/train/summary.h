// The /summary figures of a run, computed from its recorded series (pure functions, tested).
#pragma once

#include <cstdint>
#include <map>
#include <string>
#include <vector>

namespace ts {

struct SummaryInput {
  std::vector<double> step_time;      // seconds per step (slowest rank), [S]
  std::vector<int64_t> step_samples;  // samples per step, all workers, [S]
  std::vector<float> loss;            // [S]
  std::vector<double> eval_time;      // training-clock time of each evaluation, [E]
  std::vector<double> eval_accuracy;  // [E]
  int world_size = 1;
  double target_accuracy = 0.9;
  bool diverged = false;
};

// Steps excluded from throughput statistics: the first 10% of steps, at least 1 and at most 20
// (first-touch allocation, primitive creation, cache warm-up), none for runs of 1 step.
int64_t warmup_steps_for(int64_t steps);

// Keys of the run file's /summary (docs/hdf5-schema.md): images_per_s, images_per_s_per_worker, step_time_median,
// step_time_p90, warmup_steps, final_train_loss, min_train_loss, final_accuracy, best_accuracy,
// time_to_target (NaN when never reached), diverged (0/1).
std::map<std::string, double> compute_summary(const SummaryInput& in);

// Percentile (0..100) with linear interpolation; NaN for an empty input.
double percentile(std::vector<double> values, double pct);

}  // namespace ts
