// Names of the timing phases (see phases.h).
#include "train/phases.h"

namespace ts {

const char* phase_name(Phase phase) {
  static constexpr std::array<const char*, kPhaseCount> names = {
      "data_wait", "forward", "backward", "comm", "comm_wait", "optimizer", "step", "gather", "average", "broadcast"};
  return names[static_cast<size_t>(phase)];
}

}  // namespace ts
