// Accelerator utilisation from a run's phases (see utilisation.h).
#include "metrics/utilisation.h"

#include <algorithm>
#include <cmath>
#include <limits>

#include "core/error.h"

namespace ts {
namespace {

// Sum of column `rank` of an [S, R] step-major phase over steps [first, S); 0 when absent.
double column_sum(const std::map<std::string, std::vector<float>>& timing, const char* phase, int64_t ranks,
                  int64_t rank, int64_t first) {
  const auto it = timing.find(phase);
  if (it == timing.end()) return 0;
  const int64_t steps = static_cast<int64_t>(it->second.size()) / ranks;
  double sum = 0;
  for (int64_t s = first; s < steps; ++s) {
    const float v = it->second[static_cast<size_t>(s * ranks + rank)];
    if (std::isfinite(v)) sum += v;
  }
  return sum;
}

}  // namespace

std::vector<RankUtilisation> rank_utilisation(const std::map<std::string, std::vector<float>>& timing, int64_t ranks,
                                              int64_t first_step) {
  TS_CHECK(ranks > 0 && timing.count("step"), "rank_utilisation: no ranks or no step phase");
  const double nan = std::numeric_limits<double>::quiet_NaN();
  std::vector<RankUtilisation> out(static_cast<size_t>(ranks));
  for (int64_t r = 0; r < ranks; ++r) {
    RankUtilisation& u = out[static_cast<size_t>(r)];
    u.compute_seconds = column_sum(timing, "forward", ranks, r, first_step) +
                        column_sum(timing, "backward", ranks, r, first_step) +
                        column_sum(timing, "optimizer", ranks, r, first_step);
    u.data_wait_seconds = column_sum(timing, "data_wait", ranks, r, first_step);
    u.step_seconds = column_sum(timing, "step", ranks, r, first_step);
    u.au = u.step_seconds > 0 ? std::min(1.0, u.compute_seconds / u.step_seconds) : nan;
    u.data_wait_share = u.step_seconds > 0 ? std::min(1.0, u.data_wait_seconds / u.step_seconds) : nan;
  }
  return out;
}

std::map<std::string, double> utilisation_summary(const std::vector<RankUtilisation>& ranks, double threshold) {
  const double nan = std::numeric_limits<double>::quiet_NaN();
  double au_min = nan, au_sum = 0, wait_sum = 0;
  size_t measured = 0;
  for (const RankUtilisation& u : ranks) {
    if (std::isnan(u.au)) continue;
    au_min = std::isnan(au_min) ? u.au : std::min(au_min, u.au);
    au_sum += u.au;
    wait_sum += u.data_wait_share;
    ++measured;
  }
  std::map<std::string, double> s;
  s["au_min"] = au_min;
  s["au_mean"] = measured ? au_sum / static_cast<double>(measured) : nan;
  s["data_wait_share"] = measured ? wait_sum / static_cast<double>(measured) : nan;
  s["au_pass"] = std::isnan(threshold) || std::isnan(au_min) ? nan : (au_min >= threshold ? 1.0 : 0.0);
  return s;
}

}  // namespace ts
