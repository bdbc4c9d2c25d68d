// See recording.h.
#include "train/recording.h"

namespace ts {

void RunRecording::reserve(int64_t steps) {
  const size_t n = static_cast<size_t>(steps);
  step.reserve(n);
  samples.reserve(n);
  epoch.reserve(n);
  time.reserve(n);
  lr.reserve(n);
  local_loss.reserve(n);
  share.reserve(n);
  compute.reserve(n);
  for (auto& column : seconds) column.reserve(n);
}

}  // namespace ts
