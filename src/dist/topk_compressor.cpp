// Top-k sparsification (see topk_compressor.h).
#include "dist/topk_compressor.h"

#include <algorithm>
#include <cmath>
#include <cstring>
#include <functional>
#include <limits>

#include "core/error.h"

namespace ts {
namespace {
constexpr int64_t kPairBytes = sizeof(uint32_t) + sizeof(float);
}  // namespace

int64_t topk_count(int64_t count, double ratio) {
  if (count <= 0) return 0;
  const int64_t k = static_cast<int64_t>(std::ceil(ratio * static_cast<double>(count)));
  return std::clamp<int64_t>(k, 1, count);
}

namespace {
// |x|, with NaN as the largest (a non-finite gradient diverges the run anyway; the selection must
// still be a strict weak order).
float magnitude_of(float x) {
  const float m = std::fabs(x);
  return m == m ? m : std::numeric_limits<float>::infinity();
}
}  // namespace

// The k-th largest magnitude by nth_element over a contiguous copy, then one pass in index order:
// everything above it, and as many equal to it as k leaves room for (the lower indices).
void topk_encode(const float* src, int64_t count, int64_t k, uint8_t* wire) {
  TS_CHECK(count <= std::numeric_limits<uint32_t>::max(), "topk: a bucket of more than 2^32 elements; use smaller dist.bucket_mb");
  if (k <= 0) return;
  std::vector<float> magnitudes(static_cast<size_t>(count));
  for (int64_t i = 0; i < count; ++i) magnitudes[static_cast<size_t>(i)] = magnitude_of(src[i]);
  std::nth_element(magnitudes.begin(), magnitudes.begin() + (k - 1), magnitudes.end(), std::greater<float>());
  const float threshold = magnitudes[static_cast<size_t>(k - 1)];
  int64_t above = 0;
  for (int64_t i = 0; i < count; ++i) above += magnitude_of(src[i]) > threshold;
  int64_t ties_left = k - above, written = 0;
  for (int64_t i = 0; i < count && written < k; ++i) {
    const float m = magnitude_of(src[i]);
    if (m < threshold || (m == threshold && ties_left-- <= 0)) continue;
    const uint32_t index = static_cast<uint32_t>(i);
    std::memcpy(wire + written * kPairBytes, &index, sizeof index);
    std::memcpy(wire + written * kPairBytes + sizeof index, &src[i], sizeof(float));
    ++written;
  }
}

void topk_decode_add(const uint8_t* wire, int64_t k, float* dst) {
  for (int64_t j = 0; j < k; ++j) {
    uint32_t index = 0;
    float value = 0;
    std::memcpy(&index, wire + j * kPairBytes, sizeof index);
    std::memcpy(&value, wire + j * kPairBytes + sizeof index, sizeof value);
    dst[index] += value;
  }
}

}  // namespace ts
