// train-internal: what the logged loss says about a run that has not become NaN/Inf
// (docs/reliability.md "Warnings"). Warnings: an explosion, a logged loss above
// kExplosionFactor x the start (the first step's loss, or the first logged one where the step
// does not read its loss); a stall, the logged loss unchanged (within kUnchanged of the mean)
// over kStallLogs + 1 progress lines in a row, e.g. about ln(10) = 2.3026: a 10-class model that
// predicts every class alike. diverge.loss_above_factor turns a loss above that many times the
// start into a divergence. Every rank watches the losses it logs; the bound judges only losses
// combined over the ranks (the same bits on every rank), so every rank stops at the same step
// without a message between them.
#pragma once

#include <cstdint>
#include <deque>
#include <string>
#include <utility>
#include <vector>

namespace ts {

class LossWatch {
 public:
  static constexpr double kExplosionFactor = 10;  // a warning above this many times the first loss
  // A stall: kStallLogs + 1 progress lines in a row whose losses all lie within kUnchanged
  // (relative) of their mean. A model that predicts every class alike still logs losses that
  // differ by a few 0.1% at batch 64 (each batch's labels), a model that learns far more.
  static constexpr int kStallLogs = 5;
  static constexpr double kUnchanged = 0.01;

  // `diverge_factor`: diverge.loss_above_factor (0: unset, warnings only).
  explicit LossWatch(double diverge_factor) : diverge_factor_(diverge_factor) {}

  struct Verdict {
    std::vector<std::string> warnings;  // each kind given once per run
    std::string diverged;               // "" or why the run diverged (the bound was passed)
  };
  // A step's loss known on the host (every step where the step reads its loss): the first one
  // is the start the later losses are compared with. `combined`: the same on every rank.
  void start(int64_t step, double loss, bool combined);
  // The loss of the progress line at `step` (the start too, when none was given before).
  Verdict observe(int64_t step, double loss, bool combined);

 private:
  std::string explosion_warning(int64_t step, double loss) const;
  std::string stall_warning(int64_t step, double loss);

  double diverge_factor_;
  bool have_first_ = false, have_combined_first_ = false;
  double first_ = 0, combined_first_ = 0;  // the start (and the first loss combined over the ranks)
  int64_t first_step_ = 0, combined_first_step_ = 0;
  bool exploded_ = false, stalled_ = false;  // each warning once
  std::deque<std::pair<int64_t, double>> recent_;  // the last kStallLogs + 1 progress lines: step, loss
};

}  // namespace ts
