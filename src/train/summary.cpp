// Summary statistics of a run (see summary.h).
#include "train/summary.h"

#include <algorithm>
#include <cmath>
#include <limits>

namespace ts {

int64_t warmup_steps_for(int64_t steps) {
  if (steps <= 1) return 0;
  return std::clamp<int64_t>(steps / 10, 1, 20);
}

double percentile(std::vector<double> values, double pct) {
  if (values.empty()) return std::numeric_limits<double>::quiet_NaN();
  std::sort(values.begin(), values.end());
  double pos = pct / 100.0 * static_cast<double>(values.size() - 1);
  size_t lo = static_cast<size_t>(std::floor(pos));
  size_t hi = std::min(lo + 1, values.size() - 1);
  double frac = pos - static_cast<double>(lo);
  return values[lo] * (1 - frac) + values[hi] * frac;
}

std::map<std::string, double> compute_summary(const SummaryInput& in) {
  const double nan = std::numeric_limits<double>::quiet_NaN();
  std::map<std::string, double> s;
  int64_t steps = static_cast<int64_t>(in.step_time.size());
  int64_t warmup = warmup_steps_for(steps);
  std::vector<double> times(in.step_time.begin() + warmup, in.step_time.end());
  std::vector<double> rates;
  for (int64_t i = warmup; i < steps; ++i)
    if (in.step_time[i] > 0) rates.push_back(static_cast<double>(in.step_samples[i]) / in.step_time[i]);
  s["warmup_steps"] = static_cast<double>(warmup);
  s["step_time_median"] = percentile(times, 50);
  s["step_time_p90"] = percentile(times, 90);
  s["images_per_s"] = percentile(rates, 50);
  s["images_per_s_per_worker"] = s["images_per_s"] / std::max(1, in.world_size);

  double min_loss = nan;
  for (float l : in.loss)
    if (std::isfinite(l) && !(l >= min_loss)) min_loss = l;
  s["final_train_loss"] = in.loss.empty() ? nan : in.loss.back();
  s["min_train_loss"] = min_loss;

  double best = nan, tt = nan;
  for (size_t e = 0; e < in.eval_accuracy.size(); ++e) {
    double a = in.eval_accuracy[e];
    if (!(a <= best)) best = a;
    if (std::isnan(tt) && a >= in.target_accuracy) tt = in.eval_time[e];
  }
  s["final_accuracy"] = in.eval_accuracy.empty() ? nan : in.eval_accuracy.back();
  s["best_accuracy"] = best;
  s["time_to_target"] = tt;
  s["diverged"] = in.diverged ? 1.0 : 0.0;
  return s;
}

}  // namespace ts
