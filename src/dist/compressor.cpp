// Compression names and the compressor factory (see compression_options.h, compressor.h).
#include "dist/compressor.h"

#include <algorithm>

#include "core/enum_names.h"
#include "core/error.h"
#include "core/timer.h"
#include "dist/half_compressor.h"
#include "dist/powersgd_compressor.h"
#include "dist/qsgd_compressor.h"
#include "dist/topk_compressor.h"

namespace ts {
namespace {

using K = CompressionKind;
constexpr EnumName<K> kKinds[] = {{K::none, "none"}, {K::fp16, "fp16"}, {K::bf16, "bf16"},
                                  {K::qsgd, "qsgd"}, {K::topk, "topk"}, {K::powersgd, "powersgd"}};
constexpr EnumName<ErrorFeedbackMode> kFeedbackModes[] = {
    {ErrorFeedbackMode::auto_, "auto"}, {ErrorFeedbackMode::on, "on"}, {ErrorFeedbackMode::off, "off"}};

}  // namespace

const char* compression_kind_name(CompressionKind kind) { return name_in(kKinds, kind); }
std::vector<CompressionKind> all_compression_kinds() { return values_in(kKinds); }

bool compression_is_biased(CompressionKind kind) {
  return kind == CompressionKind::topk || kind == CompressionKind::powersgd;
}

const char* error_feedback_mode_name(ErrorFeedbackMode mode) { return name_in(kFeedbackModes, mode); }
std::vector<ErrorFeedbackMode> all_error_feedback_modes() { return values_in(kFeedbackModes); }

MatrixRows powersgd_rows(const WeightMatrix& m, int64_t begin, int64_t end, int64_t r) {
  if (m.cols <= 0 || m.rows <= 0) return {};
  const int64_t first = std::clamp<int64_t>((begin - m.offset + m.cols - 1) / m.cols, 0, m.rows);
  const int64_t last = std::clamp<int64_t>(end >= m.offset ? (end - m.offset) / m.cols : 0, 0, m.rows);
  const int64_t rows = last - first;
  if (rows <= 0 || (rows + m.cols) * r >= rows * m.cols) return {};  // a rank-r form would not be smaller
  return {first, rows};
}

void Compressor::restore_checkpoint_state(const std::vector<Bucket>& /*buckets*/, const std::vector<float>& state) {
  TS_CHECK(state.empty(), std::string("checkpoint: compressor ") + compression_kind_name(kind()) + " keeps no state, and the "
                              "checkpoint holds " + std::to_string(state.size()) + " values for it");
}

void GatheredCompressor::exchange(Communicator& comm, const BucketSlot& slot, float* data, float* sent,
                                  CompressionCost& cost) {
  const int64_t n = slot.count, bytes = wire_bytes(n);
  const size_t world = static_cast<size_t>(comm.size());
  wire_.resize(static_cast<size_t>(bytes));
  all_.resize(static_cast<size_t>(bytes) * world);
  const double t0 = now_seconds();
  encode(data, slot, wire_.data());
  if (sent) {
    std::fill(sent, sent + n, 0.0f);
    decode_add(wire_.data(), n, sent);
  }
  const double t1 = now_seconds();
  comm.allgather_bytes(wire_.data(), bytes, all_.data());
  const double t2 = now_seconds();
  std::fill(data, data + n, 0.0f);
  for (size_t r = 0; r < world; ++r) decode_add(all_.data() + r * static_cast<size_t>(bytes), n, data);
  const float inv = 1.0f / static_cast<float>(world);
  for (int64_t i = 0; i < n; ++i) data[i] *= inv;
  cost.compress_s += t1 - t0;
  cost.decompress_s += now_seconds() - t2;
  cost.wire_bytes += bytes;
}

std::unique_ptr<Compressor> make_compressor(const CompressionOptions& options, AllreduceAlgorithm algorithm, int rank) {
  switch (options.kind) {
    case CompressionKind::fp16: return std::make_unique<HalfCompressor>(HalfFormat::fp16);
    case CompressionKind::bf16: return std::make_unique<HalfCompressor>(HalfFormat::bf16);
    case CompressionKind::qsgd:
      return std::make_unique<QsgdCompressor>(options.qsgd_bits, options.qsgd_bucket, options.seed, rank);
    case CompressionKind::topk: return std::make_unique<TopkCompressor>(options.topk_ratio);
    case CompressionKind::powersgd: return std::make_unique<PowerSgdCompressor>(options, algorithm);
    case CompressionKind::none: break;
  }
  throw RuntimeError("make_compressor: dist.compression none has no compressor");
}

}  // namespace ts
