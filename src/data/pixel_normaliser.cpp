// PixelNormaliser (see pixel_normaliser.h).
#include "data/pixel_normaliser.h"

#include <string>

#include "core/error.h"

namespace ts {

PixelNormaliser::PixelNormaliser(const Normalisation& stats, int64_t channels, int64_t plane)
    : channels_(channels), plane_(plane) {
  const size_t n = stats.mean.size();
  if (n != stats.stddev.size() || (n > 1 && static_cast<int64_t>(n) != channels))
    throw RuntimeError("pixel normalisation: " + std::to_string(n) + " means and " +
                       std::to_string(stats.stddev.size()) + " standard deviations for " +
                       std::to_string(channels) + " channels (need 0, 1 or one per channel)");
  lut_.resize(static_cast<size_t>(channels * 256));
  for (int64_t c = 0; c < channels; ++c) {
    const size_t k = n == 1 ? 0 : static_cast<size_t>(c);
    const float mean = n ? stats.mean[k] : 0.0f;
    const float sd = n ? stats.stddev[k] : 1.0f;
    for (int p = 0; p < 256; ++p)
      lut_[static_cast<size_t>(c * 256 + p)] = (static_cast<float>(p) / 255.0f - mean) / sd;
  }
}

void PixelNormaliser::apply(const uint8_t* src, float* dst) const {
  for (int64_t c = 0; c < channels_; ++c) {
    const float* table = lut_.data() + c * 256;
    for (int64_t i = 0; i < plane_; ++i) dst[c * plane_ + i] = table[src[c * plane_ + i]];
  }
}

}  // namespace ts
