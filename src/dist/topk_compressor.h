// dist-internal: top-k sparsification (Aji & Heafield 2017; Lin et al. 2018), biased, all-gathered.
// Each rank sends the k = max(1, ceil(ratio * n)) elements of its bucket with the largest
// magnitude (ties: the lower index), as k pairs (uint32 index in the bucket, fp32 value) in
// index order; with k fixed per bucket every rank's buffer has the same size, so the exchange is
// one MPI_Allgather. Every rank adds every rank's pairs in rank order and scales by 1/N. Error:
// the kept entries are exact, the others are dropped (error feedback carries them to the next
// step). Wire per rank: 8 k bytes.
#pragma once

#include "dist/compressor.h"

namespace ts {

// k for a bucket of `count` elements (0 for an empty bucket).
int64_t topk_count(int64_t count, double ratio);
// Writes the k largest-magnitude elements of src[0, count) into `wire` (8 k bytes).
void topk_encode(const float* src, int64_t count, int64_t k, uint8_t* wire);
// dst[index] += value for each of the k pairs.
void topk_decode_add(const uint8_t* wire, int64_t k, float* dst);

class TopkCompressor : public GatheredCompressor {
 public:
  explicit TopkCompressor(double ratio) : ratio_(ratio) {}
  CompressionKind kind() const override { return CompressionKind::topk; }

 private:
  int64_t wire_bytes(int64_t count) const override { return 8 * topk_count(count, ratio_); }
  void encode(const float* src, const BucketSlot& slot, uint8_t* wire) const override {
    topk_encode(src, slot.count, topk_count(slot.count, ratio_), wire);
  }
  void decode_add(const uint8_t* wire, int64_t count, float* dst) const override {
    topk_decode_add(wire, topk_count(count, ratio_), dst);
  }

  double ratio_;
};

}  // namespace ts
