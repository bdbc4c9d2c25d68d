// now_seconds() on the steady wall clock (see timer.h); alone in its file, so that
// trainscale-sim can link its simulated clock in its place.
#include "core/timer.h"

namespace ts {

double now_seconds() {
  using clock = std::chrono::steady_clock;
  return std::chrono::duration<double>(clock::now().time_since_epoch()).count();
}

}  // namespace ts
