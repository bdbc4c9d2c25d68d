// Accelerator utilisation (AU) in the sense of MLPerf Storage: the share of a rank's wall time
// in which its device computed, from the run's /timing phases. compute = forward + backward +
// optimizer, over the steps after warm-up; AU = compute / step; data-wait share = data_wait /
// step. One definition for the run file's writer (train/run_output) and its readers
// (`trainscale show`); docs/hdf5-schema.md "/utilisation".
#pragma once

#include <cstdint>
#include <map>
#include <string>
#include <vector>

namespace ts {

struct RankUtilisation {
  double compute_seconds = 0, data_wait_seconds = 0, step_seconds = 0;  // sums over the measured steps
  double au = 0;               // compute / step (NaN when no step was measured)
  double data_wait_share = 0;  // data_wait / step
};

// Per rank [R] from `timing` (phase name -> [S, R] step-major, as RunResult::timing), over
// steps [first_step, S). Phases missing from `timing` count as 0 (step must be present).
std::vector<RankUtilisation> rank_utilisation(const std::map<std::string, std::vector<float>>& timing, int64_t ranks,
                                              int64_t first_step);

// The /summary figures: au_min (the least utilised rank's, which the MLPerf Storage rule
// judges), au_mean, data_wait_share (mean over ranks) and au_pass (1 when au_min >= threshold,
// 0 when below, NaN when `threshold` is NaN: no threshold set).
std::map<std::string, double> utilisation_summary(const std::vector<RankUtilisation>& ranks, double threshold);

}  // namespace ts
