// The reductions' arithmetic on the host (see reduce_kernel.h).
#include "dist/reduce_kernel.h"

namespace ts {

void add_into(float* __restrict dst, const float* __restrict src, int64_t count) {
  for (int64_t i = 0; i < count; ++i) dst[i] += src[i];
}

void scale(float* data, int64_t count, float factor) {
  for (int64_t i = 0; i < count; ++i) data[i] *= factor;
}

}  // namespace ts
