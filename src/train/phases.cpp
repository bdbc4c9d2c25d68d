// Names of the timing phases (see phases.h).
#include "train/phases.h"

namespace ts {

const char* phase_name(Phase phase) {
  static constexpr std::array<const char*, kPhaseCount> names = {
      "data_wait", "forward", "backward", "comm", "comm_wait", "optimizer",
      "step",      "gather",  "average",  "broadcast", "compress", "decompress"};
  return names[static_cast<size_t>(phase)];
}

std::vector<Phase> recorded_phases(bool ps_phases, bool compression) {
  std::vector<Phase> phases;
  for (size_t p = 0; p < kCommonPhaseCount; ++p) phases.push_back(static_cast<Phase>(p));
  if (ps_phases) phases.insert(phases.end(), {Phase::gather, Phase::average, Phase::broadcast});
  if (compression) phases.insert(phases.end(), {Phase::compress, Phase::decompress});
  return phases;
}

}  // namespace ts
