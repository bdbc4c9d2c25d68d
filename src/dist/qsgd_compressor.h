// dist-internal: QSGD (Alistarh et al. 2017), unbiased stochastic quantisation, all-gathered.
// The bucket is cut into groups of `group` elements; each group sends its L2 norm (fp32) and, per
// element, a sign and a level l in 0..s, s = 2^(bits-1) - 1, drawn so that E[l] = s |x| / norm
// (l = floor(s |x| / norm) + 1 with probability the fractional part). Decoded: sign * norm * l / s.
// Error: unbiased; each element within norm / s of its value, variance at most
// norm^2 / (4 s^2) per element. Wire per rank: 4 * ceil(n / group) + ceil(n * bits / 8) bytes.
// Every rank decodes every rank's buffer and sums them in rank order (same bits everywhere).
#pragma once

#include "core/rng.h"
#include "dist/compressor.h"

namespace ts {

// Bytes of one encoded bucket of `count` elements.
int64_t qsgd_wire_bytes(int64_t count, int bits, int64_t group);
// Encodes src[0, count) into `wire` (qsgd_wire_bytes bytes), drawing the rounding from `rng`.
void qsgd_encode(const float* src, int64_t count, int bits, int64_t group, Rng& rng, uint8_t* wire);
// dst[i] += the decoded value of element i.
void qsgd_decode_add(const uint8_t* wire, int64_t count, int bits, int64_t group, float* dst);

class QsgdCompressor : public GatheredCompressor {
 public:
  QsgdCompressor(int bits, int64_t group, uint64_t seed, int rank) : bits_(bits), group_(group), seed_(seed), rank_(rank) {}
  CompressionKind kind() const override { return CompressionKind::qsgd; }

 private:
  int64_t wire_bytes(int64_t count) const override { return qsgd_wire_bytes(count, bits_, group_); }
  // One stream per (seed, rank, step, bucket): a run repeats exactly, and ranks draw independently.
  void encode(const float* src, const BucketSlot& slot, uint8_t* wire) const override {
    Rng rng(seed_mix(seed_, static_cast<uint64_t>(rank_), seed_mix(static_cast<uint64_t>(slot.step), slot.index)));
    qsgd_encode(src, slot.count, bits_, group_, rng, wire);
  }
  void decode_add(const uint8_t* wire, int64_t count, float* dst) const override {
    qsgd_decode_add(wire, count, bits_, group_, dst);
  }

  int bits_;
  int64_t group_;
  uint64_t seed_;
  int rank_;
};

}  // namespace ts
