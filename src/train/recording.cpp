// See recording.h.
#include "train/recording.h"

#include <algorithm>

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
  wire_bytes.reserve(n);
  for (auto& column : seconds) column.reserve(n);
  read_bytes.reserve(n);
  read_seconds.reserve(n);
}

int64_t bucket_stride_for(int64_t steps, int64_t buckets, int64_t world) {
  const int64_t spans = std::max<int64_t>(1, steps) * std::max<int64_t>(1, buckets) * std::max<int64_t>(1, world);
  return std::max<int64_t>(1, (spans + kMaxBucketSpans - 1) / kMaxBucketSpans);
}

}  // namespace ts
