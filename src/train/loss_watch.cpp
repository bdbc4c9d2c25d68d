// The logged loss watched for explosions and stalls (see loss_watch.h).
#include "train/loss_watch.h"

#include <algorithm>
#include <cmath>
#include <utility>

#include "core/strings.h"

namespace ts {
namespace {

// "2.303", "1.234e+29": the loss as people compare it.
std::string loss_text(double loss) { return format_number("%.4g", loss); }

std::string factor_text(double factor) { return format_number("%g", factor); }

}  // namespace

void LossWatch::start(int64_t step, double loss, bool combined) {
  if (!std::isfinite(loss)) return;
  if (!have_first_) {
    have_first_ = true;
    first_ = loss;
    first_step_ = step;
  }
  if (combined && !have_combined_first_) {
    have_combined_first_ = true;
    combined_first_ = loss;
    combined_first_step_ = step;
  }
}

LossWatch::Verdict LossWatch::observe(int64_t step, double loss, bool combined) {
  Verdict v;
  if (!std::isfinite(loss)) return v;  // NaN/Inf is the divergence check's (train/loop.cpp)
  start(step, loss, combined);
  if (diverge_factor_ > 0 && combined && combined_first_ > 0 && loss > diverge_factor_ * combined_first_)
    v.diverged = "loss " + loss_text(loss) + " at step " + std::to_string(step) + " is above diverge.loss_above_factor " +
                 factor_text(diverge_factor_) + " x the loss at the start " + loss_text(combined_first_) + " (step " +
                 std::to_string(combined_first_step_) + ")";
  if (!exploded_ && first_ > 0 && loss > kExplosionFactor * first_) {
    exploded_ = true;
    v.warnings.push_back(explosion_warning(step, loss));
  }
  if (std::string stall = stall_warning(step, loss); !stall.empty()) v.warnings.push_back(std::move(stall));
  return v;
}

std::string LossWatch::explosion_warning(int64_t step, double loss) const {
  return "the loss exploded: " + loss_text(loss) + " at step " + std::to_string(step) + " is above " +
         factor_text(kExplosionFactor) + " x the loss at the start " + loss_text(first_) + " (step " +
         std::to_string(first_step_) + "); the run is not learning: lower lr, add lr_schedule.warmup_epochs, or set "
         "diverge.loss_above_factor to end such runs as diverged (exit 3)";
}

// The last kStallLogs + 1 progress lines, warned once when all their losses lie within
// kUnchanged of their mean. A loss of (about) zero is no stall.
std::string LossWatch::stall_warning(int64_t step, double loss) {
  recent_.emplace_back(step, loss);
  if (recent_.size() > static_cast<size_t>(kStallLogs + 1)) recent_.pop_front();
  if (stalled_ || recent_.size() <= static_cast<size_t>(kStallLogs)) return "";
  double mean = 0, lo = recent_.front().second, hi = lo;
  for (const auto& line : recent_) {
    mean += line.second / static_cast<double>(recent_.size());
    lo = std::min(lo, line.second);
    hi = std::max(hi, line.second);
  }
  if (!(mean > 1e-6) || hi - mean > kUnchanged * mean || mean - lo > kUnchanged * mean) return "";
  stalled_ = true;
  return "the loss stalled: " + loss_text(lo) + ".." + loss_text(hi) + " (within " + factor_text(kUnchanged * 100) +
         "% of " + loss_text(mean) + ") over " + std::to_string(recent_.size()) + " progress lines, steps " +
         std::to_string(recent_.front().first) + ".." + std::to_string(step) +
         (std::fabs(mean - std::log(10.0)) < kUnchanged * std::log(10.0)
              ? " (about ln(10) = 2.303: a 10-class model that predicts every class alike)"
              : std::string()) +
         "; the model is not learning: an LR too high blows the weights up in the first steps (lower lr or add "
         "lr_schedule.warmup_epochs), one too low barely moves them";
}

}  // namespace ts
