// Error-feedback memory (see error_feedback.h).
#include "dist/error_feedback.h"

#include <algorithm>
#include <string>

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

void ErrorFeedback::restore(const float* memory, int64_t count) {
  TS_CHECK(count == static_cast<int64_t>(memory_.size()), "checkpoint: the error-feedback memory holds " +
                                                             std::to_string(count) + " values, the gradient arena " +
                                                             std::to_string(memory_.size()));
  std::copy(memory, memory + count, memory_.begin());
}

}  // namespace ts
