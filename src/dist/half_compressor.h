// dist-internal: the fp16 and bf16 compressors (linear). Each rank rounds its bucket, scaled by
// 1/N first (so the sum stays in range), to 16 bits; the 16-bit values are all-reduced with
// Communicator::allreduce_sum_half (each addition in fp32, rounded back to 16 bits) and
// widened to fp32. Error: each element of a rank's contribution is off by at most half an ulp
// of its format (fp16: 2^-11 relative; bf16: 2^-8 relative), plus one such rounding per
// addition of the reduction. Wire: 2 bytes per element.
#pragma once

#include "dist/compressor.h"

namespace ts {

class HalfCompressor : public Compressor {
 public:
  explicit HalfCompressor(HalfFormat format) : format_(format) {}
  CompressionKind kind() const override {
    return format_ == HalfFormat::fp16 ? CompressionKind::fp16 : CompressionKind::bf16;
  }
  void exchange(Communicator& comm, const BucketSlot& slot, float* data, float* sent, CompressionCost& cost) override;

 private:
  HalfFormat format_;
  std::vector<uint16_t> wire_;  // reused: the timed loop does not allocate after the first step
};

}  // namespace ts
