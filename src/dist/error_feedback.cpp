// Error-feedback memory (see error_feedback.h).
#include "dist/error_feedback.h"

#include "core/error.h"

namespace ts {

void ErrorFeedback::add_memory(int64_t offset, float* data, int64_t count) const {
  TS_CHECK(offset >= 0 && offset + count <= static_cast<int64_t>(memory_.size()), "error feedback: range outside the arena");
  const float* e = memory_.data() + offset;
  for (int64_t i = 0; i < count; ++i) data[i] += e[i];
}

void ErrorFeedback::keep_residual(int64_t offset, const float* input, const float* sent, int64_t count) {
  TS_CHECK(offset >= 0 && offset + count <= static_cast<int64_t>(memory_.size()), "error feedback: range outside the arena");
  float* e = memory_.data() + offset;
  for (int64_t i = 0; i < count; ++i) e[i] = input[i] - sent[i];
}

}  // namespace ts
