// The gradient compressors' codec rates for calibration.h: each real compressor exchanges a
// bucket of random normal floats on a one-rank communicator, so its own timers (CompressionCost)
// hold the encoding and the decoding of one contribution, without a network.
#include <algorithm>
#include <memory>
#include <vector>

#include "core/rng.h"
#include "core/timer.h"
#include "dist/compressor.h"
#include "perfmodel/calibration.h"

namespace ts::perf {
namespace {

// The defaults of docs/config.md; PowerSGD's bucket is one square weight matrix.
CompressionOptions codec_options(CompressionKind kind, int64_t side) {
  CompressionOptions o;
  o.kind = kind;
  if (kind == CompressionKind::powersgd) o.matrices = {{0, side, side}};
  return o;
}

double codec_parameter(const CompressionOptions& o) {
  if (o.kind == CompressionKind::topk) return o.topk_ratio;
  if (o.kind == CompressionKind::powersgd) return static_cast<double>(o.powersgd_rank);
  return 0;
}

}  // namespace

std::map<std::string, CodecRate> measure_codec_rates(int64_t side, double budget_s) {
  const int64_t n = side * side;
  std::vector<float> gradients(static_cast<size_t>(n)), bucket(static_cast<size_t>(n));
  Rng rng(7);
  for (float& g : gradients) g = static_cast<float>(rng.normal());
  auto self = Communicator::self();
  std::map<std::string, CodecRate> rates;
  const std::vector<CompressionKind> kinds = {CompressionKind::fp16, CompressionKind::bf16, CompressionKind::qsgd,
                                              CompressionKind::topk, CompressionKind::powersgd};
  for (CompressionKind kind : kinds) {
    const CompressionOptions o = codec_options(kind, side);
    std::unique_ptr<Compressor> compressor = make_compressor(o, AllreduceAlgorithm::mpi, 0);
    double encode = 1e30, decode = 1e30;
    const double end = now_seconds() + budget_s / static_cast<double>(kinds.size());
    for (int rep = 0; rep < 3 || (now_seconds() < end && rep < 100); ++rep) {
      std::copy(gradients.begin(), gradients.end(), bucket.begin());
      CompressionCost cost;
      compressor->exchange(*self, {0, n, 0, rep}, bucket.data(), nullptr, cost);
      encode = std::min(encode, cost.compress_s);
      decode = std::min(decode, cost.decompress_s);
    }
    rates[compression_kind_name(kind)] = {encode / static_cast<double>(n), decode / static_cast<double>(n), codec_parameter(o)};
  }
  return rates;
}

}  // namespace ts::perf
