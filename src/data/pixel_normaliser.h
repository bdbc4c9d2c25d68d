// uint8 pixels -> normalised floats, per channel: x = (p/255 - mean[c]) / stddev[c], through a
// 256-entry lookup table per channel (one load per pixel in the sources' read()).
#pragma once

#include <cstdint>
#include <vector>

namespace ts {

// Per-channel statistics of a data set's training split. Empty: scale to [0,1] only; one
// entry: the same for every channel; else one entry per channel.
struct Normalisation {
  std::vector<float> mean, stddev;
};

class PixelNormaliser {
 public:
  // `channels` planes of `plane` pixels each; throws RuntimeError if the statistics have
  // neither 0, 1 nor `channels` entries (or mean and stddev differ in length).
  PixelNormaliser(const Normalisation& stats, int64_t channels, int64_t plane);
  // src (channels, plane) uint8 -> dst (channels, plane) float
  void apply(const uint8_t* src, float* dst) const;

 private:
  int64_t channels_, plane_;
  std::vector<float> lut_;  // lut_[c * 256 + p]
};

}  // namespace ts
