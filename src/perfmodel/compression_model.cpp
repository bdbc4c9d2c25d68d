// See compression_model.h.
#include "perfmodel/compression_model.h"

#include <algorithm>
#include <cmath>
#include <cstdio>

#include "backend/descriptors.h"
#include "core/error.h"

namespace ts::perf {
namespace {

// Error feedback per element: g += e and the copy of g + e (5 float passes), then e = sent
// input - sent (3): 8 x 4 bytes through memory (dist/error_feedback.h).
constexpr double kFeedbackBytesPerElement = 32.0;

// The run's parameter over the one the rate was measured at (1 for codecs without one).
double parameter_scale(const CompressionOptions& o, const CodecRate& r) {
  const double run = codec_parameter(o);
  return run > 0 && r.parameter > 0 ? run / r.parameter : 1.0;
}

}  // namespace

double codec_parameter(const CompressionOptions& o) {
  if (o.kind == CompressionKind::topk) return o.topk_ratio;
  if (o.kind == CompressionKind::powersgd) return static_cast<double>(o.powersgd_rank);
  return 0;
}

std::vector<WeightMatrix> weight_matrices_of_work(const std::vector<LayerWork>& layers) {
  std::vector<WeightMatrix> matrices;
  int64_t offset = 0;
  for (const LayerWork& l : layers) {
    if (l.parameters > 0 && l.kind == "conv") {
      const ConvDesc d = ConvDesc::parse(l.descriptor);
      matrices.push_back({offset, d.oc, d.weight_count() / d.oc});
    } else if (l.parameters > 0 && l.kind == "fc") {
      const FcDesc d = FcDesc::parse(l.descriptor);
      matrices.push_back({offset, d.oc, d.ic});
    }
    offset += l.parameters;
  }
  return matrices;
}

CompressionModel::CompressionModel(const CompressionOptions& options, const ClusterSpec& cluster,
                                   const AllreduceModel& run_allreduce, const AllreduceModel& mpi, const WorkerRate& rate,
                                   int64_t workers)
    : options_(options), run_allreduce_(run_allreduce), mpi_(mpi), bytes_per_s_(rate.bytes_per_s), workers_(workers) {
  const std::string kind = compression_kind_name(options.kind);
  const auto it = cluster.calibration.compression.find(kind);
  if (it == cluster.calibration.compression.end())
    throw ConfigError("cluster file " + (cluster.path.empty() ? cluster.name : cluster.path) +
                      " has no calibration.compression." + kind +
                      ": the model prices a compressor from its codec measured on a node of the cluster (`trainscale "
                      "calibrate --out FILE` measures every compressor); add that section, or predict with "
                      "dist.compression: none");
  rate_ = it->second;
}

CompressedBucketCost CompressionModel::bucket(int64_t offset, int64_t count, bool tail) const {
  CompressedBucketCost c;
  if (workers_ <= 1 || count <= 0) return c;  // one rank: its gradients are the mean, nothing moves
  const double n = static_cast<double>(count), p = static_cast<double>(workers_);
  const double scale = parameter_scale(options_, rate_);
  c.encode = rate_.encode_s_per_element * n;  // PowerSGD's follows its matrices (price_powersgd)
  switch (options_.kind) {
    case CompressionKind::fp16:
    case CompressionKind::bf16:
      c.wire_bytes = 2.0 * n;
      c.wire = mpi_.seconds(c.wire_bytes);
      c.decode = rate_.decode_s_per_element * n;
      break;
    case CompressionKind::qsgd: {
      const double group = static_cast<double>(std::max<int64_t>(1, options_.qsgd_bucket));
      c.wire_bytes = 4.0 * std::ceil(n / group) + std::ceil(n * options_.qsgd_bits / 8.0);
      c.wire = mpi_.allgather_seconds(c.wire_bytes);
      c.decode = p * rate_.decode_s_per_element * n;  // every rank's buffer decoded and summed
      break;
    }
    case CompressionKind::topk: {
      const double k = std::max(1.0, std::ceil(options_.topk_ratio * n));
      c.wire_bytes = 8.0 * k;  // (uint32 index, fp32 value) pairs
      c.wire = mpi_.allgather_seconds(c.wire_bytes);
      c.decode = p * rate_.decode_s_per_element * n * scale;
      break;
    }
    case CompressionKind::powersgd:
      price_powersgd(offset, count, c);
      break;
    case CompressionKind::none:
      break;
  }
  if (options_.error_feedback_on()) c.feedback = kFeedbackBytesPerElement * n / bytes_per_s_;
  if (tail) c.wire += run_allreduce_.seconds(2.0 * sizeof(float));  // the loss and the non-finite count
  return c;
}

// Each weight matrix's whole rows inside the bucket, when (rows + cols) r < rows cols, travel as
// P (rows x r) and Q (cols x r); every other element (biases, batch norm, partial rows) in fp32
// with Q. Encoding and decoding follow the compressed elements times r.
void CompressionModel::price_powersgd(int64_t offset, int64_t count, CompressedBucketCost& c) const {
  const int64_t r = options_.powersgd_rank;
  double p_floats = 0, q_floats = 0, compressed = 0;
  for (const WeightMatrix& m : options_.matrices) {
    const int64_t rows = powersgd_rows(m, offset, offset + count, r).rows;  // the trainer's rows
    p_floats += static_cast<double>(rows * r);
    q_floats += static_cast<double>(rows > 0 ? m.cols * r : 0);
    compressed += static_cast<double>(rows * m.cols);
  }
  const double plain = static_cast<double>(count) - compressed;
  const double scale = parameter_scale(options_, rate_);
  c.wire_bytes = 4.0 * (p_floats + q_floats + plain);
  c.encode = rate_.encode_s_per_element * compressed * scale;
  c.decode = rate_.decode_s_per_element * compressed * scale;
  c.wire = run_allreduce_.average_seconds(4.0 * p_floats) + run_allreduce_.average_seconds(4.0 * (q_floats + plain));
}

std::string CompressionModel::describe() const {
  const char* at = options_.kind == CompressionKind::topk ? "ratio" : "rank";
  char measured_at[64] = "";
  if (rate_.parameter > 0) std::snprintf(measured_at, sizeof measured_at, " at %s %g", at, rate_.parameter);
  char text[200];
  std::snprintf(text, sizeof text, "%s, codec measured%s: encode %.3g ns, decode %.3g ns per element",
                compression_kind_name(options_.kind), measured_at, rate_.encode_s_per_element * 1e9,
                rate_.decode_s_per_element * 1e9);
  return text;
}

}  // namespace ts::perf
