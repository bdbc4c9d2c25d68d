// Progress lines of sweep expansion (see expand_progress.h).
#include "sweep/expand_progress.h"

#include <cmath>

#include "core/timer.h"

namespace ts {

ExpansionProgress::ExpansionProgress(std::ostream* out, double every_seconds)
    : out_(out), every_seconds_(every_seconds), start_(now_seconds()), last_(start_) {}

void ExpansionProgress::report(const char* what, int64_t done, int64_t total, const char* items) {
  if (out_ == nullptr) return;
  const double now = now_seconds();
  if (now - last_ < every_seconds_ && done != total) return;
  if (done == total && last_ == start_ && now - start_ < every_seconds_) return;  // a short phase: no line
  last_ = now;
  *out_ << "sweep expand: " << what << " " << done << " of " << total << " " << items << " ("
        << (total > 0 ? 100 * done / total : 100) << "%), " << std::lround(now - start_) << " s so far" << std::endl;
}

}  // namespace ts
