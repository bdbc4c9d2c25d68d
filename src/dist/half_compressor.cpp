// fp16 / bf16 compression (see half_compressor.h).
#include "dist/half_compressor.h"

#include "core/timer.h"
#include "dist/half_codec.h"

namespace ts {

void HalfCompressor::exchange(Communicator& comm, const BucketSlot& slot, float* data, float* sent,
                              CompressionCost& cost) {
  const int64_t n = slot.count;
  const float world = static_cast<float>(comm.size());
  const bool fp16 = format_ == HalfFormat::fp16;
  wire_.resize(static_cast<size_t>(n));
  const double t0 = now_seconds();
  for (int64_t i = 0; i < n; ++i) {
    const float share = data[i] / world;
    wire_[i] = fp16 ? fp16_from_float(share) : bf16_from_float(share);
    if (sent) sent[i] = (fp16 ? float_from_fp16(wire_[i]) : float_from_bf16(wire_[i])) * world;
  }
  const double t1 = now_seconds();
  comm.allreduce_sum_half(wire_.data(), n, format_);
  const double t2 = now_seconds();
  for (int64_t i = 0; i < n; ++i) data[i] = fp16 ? float_from_fp16(wire_[i]) : float_from_bf16(wire_[i]);
  cost.compress_s += t1 - t0;
  cost.decompress_s += now_seconds() - t2;
  cost.wire_bytes += n * static_cast<int64_t>(sizeof(uint16_t));
}

}  // namespace ts
