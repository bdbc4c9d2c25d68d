// The gradient compressors' codecs on known vectors (docs/compression.md):
// fp16/bf16 round to nearest even; qsgd is unbiased over seeds with bounded
// variance; topk keeps the largest entries exactly; PowerSGD reproduces a matrix of rank <= r;
// error feedback carries exactly what was not sent into the next step. Exchanges run on a
// world of one rank (Communicator::self()); test_mpi_compression checks them across ranks.
#include <gtest/gtest.h>

#include <algorithm>
#include <cmath>
#include <cstring>
#include <vector>

#include "config/run_config.h"
#include "core/error.h"
#include "core/rng.h"
#include "dist/compressor.h"
#include "dist/error_feedback.h"
#include "dist/exchange_strategy.h"
#include "dist/half_codec.h"
#include "dist/powersgd_compressor.h"
#include "dist/qsgd_compressor.h"
#include "dist/topk_compressor.h"

#include "mpi_test_environment.h"

using namespace ts;

namespace {

float float_of_bits(uint32_t x) {
  float f = 0;
  std::memcpy(&f, &x, sizeof f);
  return f;
}

}  // namespace

TEST(HalfCodec, Fp16RoundsToNearestEven) {
  EXPECT_EQ(fp16_from_float(1.0f), 0x3c00);
  EXPECT_EQ(fp16_from_float(-2.0f), 0xc000);
  EXPECT_EQ(fp16_from_float(65504.0f), 0x7bff);                    // the largest half
  EXPECT_EQ(fp16_from_float(65519.0f), 0x7bff);                    // below the halfway point
  EXPECT_EQ(fp16_from_float(65520.0f), 0x7c00);                    // halfway to 2^16 rounds to inf
  EXPECT_EQ(fp16_from_float(1.0f + std::ldexp(1.0f, -11)), 0x3c00);      // tie -> even (1.0)
  EXPECT_EQ(fp16_from_float(1.0f + 3 * std::ldexp(1.0f, -11)), 0x3c02);  // tie -> even (up)
  EXPECT_EQ(fp16_from_float(std::ldexp(1.0f, -24)), 0x0001);             // the smallest subnormal
  EXPECT_EQ(fp16_from_float(std::ldexp(1.0f, -25)), 0x0000);             // tie -> even (zero)
  EXPECT_EQ(fp16_from_float(std::ldexp(3.0f, -26)), 0x0001);             // above the tie
  EXPECT_EQ(fp16_from_float(std::ldexp(1023.5f, -24)), 0x0400);          // rounds into the normals
  EXPECT_EQ(fp16_from_float(INFINITY), 0x7c00);
  EXPECT_TRUE(std::isnan(float_from_fp16(fp16_from_float(NAN))));
  EXPECT_EQ(float_from_fp16(0x3555), 0.333251953125f);
  EXPECT_EQ(float_from_fp16(0x0001), std::ldexp(1.0f, -24));
  EXPECT_EQ(float_from_fp16(0xfbff), -65504.0f);
  // Every half survives the round trip.
  for (uint32_t h = 0; h < 0x10000; ++h) {
    if ((h & 0x7c00) == 0x7c00 && (h & 0x3ff)) continue;  // NaNs
    ASSERT_EQ(fp16_from_float(float_from_fp16(static_cast<uint16_t>(h))), h) << std::hex << h;
  }
}

// fp16's subnormal range (where small gradients land) against |x| * 2^24 rounded by the FPU.
TEST(HalfCodec, Fp16SubnormalsRoundLikeTheFpu) {
  Rng rng(3);
  for (int i = 0; i < 200000; ++i) {
    const float x = static_cast<float>((rng.uniform() * 2 - 1) * std::ldexp(1.0, -14) * (i % 2 ? 1.0 : 1e-3));
    const float want = std::nearbyint(std::fabs(x) * 16777216.0f);
    ASSERT_EQ(fp16_from_float(x) & 0x7fff, static_cast<uint32_t>(want)) << x;
    ASSERT_EQ(fp16_from_float(x) & 0x8000, std::signbit(x) ? 0x8000u : 0u) << x;
  }
  EXPECT_EQ(fp16_from_float(float_of_bits(1)), 0);  // an fp32 subnormal
}

TEST(HalfCodec, Bf16RoundsToNearestEven) {
  EXPECT_EQ(bf16_from_float(1.0f), 0x3f80);
  EXPECT_EQ(bf16_from_float(float_of_bits(0x3f808000)), 0x3f80);  // tie -> even (down)
  EXPECT_EQ(bf16_from_float(float_of_bits(0x3f818000)), 0x3f82);  // tie -> even (up)
  EXPECT_EQ(bf16_from_float(float_of_bits(0x3f808001)), 0x3f81);  // above the tie
  EXPECT_EQ(bf16_from_float(float_of_bits(0x7f7fffff)), 0x7f80);  // fp32's largest rounds to inf
  EXPECT_TRUE(std::isnan(float_from_bf16(bf16_from_float(NAN))));
  EXPECT_EQ(float_from_bf16(0xc0a0), -5.0f);
}

TEST(HalfCodec, RoundTripWithinHalfAnUlp) {
  Rng rng(7);
  for (int i = 0; i < 100000; ++i) {
    const float x = static_cast<float>(rng.normal() * std::pow(10.0, rng.uniform() * 6 - 3));
    // fp16 below 2^-14 is subnormal: half its fixed ulp 2^-24.
    const float fp16_bound = std::max(std::fabs(x) * std::ldexp(1.0f, -11) * 1.0001f, std::ldexp(1.0f, -25));
    EXPECT_LE(std::fabs(float_from_fp16(fp16_from_float(x)) - x), fp16_bound) << x;
    EXPECT_LE(std::fabs(float_from_bf16(bf16_from_float(x)) - x), std::fabs(x) * std::ldexp(1.0f, -8) * 1.0001f);
  }
}

TEST(Qsgd, WireFormatAndErrorBound) {
  EXPECT_EQ(qsgd_wire_bytes(0, 8, 512), 0);
  EXPECT_EQ(qsgd_wire_bytes(1000, 8, 512), 2 * 4 + 1000);
  EXPECT_EQ(qsgd_wire_bytes(1000, 3, 100), 10 * 4 + 375);
  EXPECT_EQ(qsgd_wire_bytes(7, 3, 100), 4 + 3);
  for (int bits : {2, 3, 4, 5, 8}) {
    const int64_t n = 1001, group = 64;
    std::vector<float> x(n), out(n, 0.0f);
    Rng data(bits);
    for (float& v : x) v = static_cast<float>(data.normal());
    x[5] = 0;
    std::vector<uint8_t> wire(static_cast<size_t>(qsgd_wire_bytes(n, bits, group)));
    Rng rounding(11);
    qsgd_encode(x.data(), n, bits, group, rounding, wire.data());
    qsgd_decode_add(wire.data(), n, bits, group, out.data());
    const float levels = static_cast<float>((1 << (bits - 1)) - 1);
    for (int64_t g = 0; g * group < n; ++g) {
      double norm = 0;
      for (int64_t i = g * group; i < std::min(n, (g + 1) * group); ++i) norm += double(x[i]) * x[i];
      for (int64_t i = g * group; i < std::min(n, (g + 1) * group); ++i) {
        EXPECT_LE(std::fabs(out[i] - x[i]), std::sqrt(norm) / levels * 1.0001) << "bits " << bits << " element " << i;
        if (out[i] != 0) EXPECT_EQ(std::signbit(out[i]), std::signbit(x[i]));
      }
    }
    EXPECT_EQ(out[5], 0.0f);
  }
}

// E[decode(encode(x))] = x: the mean over many seeds converges at the rate the variance bound
// norm^2 / (4 s^2) per element allows (5 standard errors), and the variance stays below it.
TEST(Qsgd, UnbiasedOverSeedsWithBoundedVariance) {
  const int64_t n = 16, group = 16;
  const int bits = 3, trials = 20000;
  const std::vector<float> x = {0.9f, -0.3f, 0.05f, 0.0f, 0.7f, -0.65f, 0.1f, 0.2f,
                                -0.01f, 0.33f, 0.5f, -0.5f, 0.25f, 0.125f, -0.8f, 0.4f};
  double norm = 0;
  for (float v : x) norm += double(v) * v;
  norm = std::sqrt(norm);
  const double s = (1 << (bits - 1)) - 1, bound = norm * norm / (4 * s * s);
  std::vector<double> sum(n, 0), sum_sq(n, 0);
  std::vector<uint8_t> wire(static_cast<size_t>(qsgd_wire_bytes(n, bits, group)));
  for (int t = 0; t < trials; ++t) {
    Rng rng(seed_mix(3, static_cast<uint64_t>(t)));
    std::vector<float> out(n, 0.0f);
    qsgd_encode(x.data(), n, bits, group, rng, wire.data());
    qsgd_decode_add(wire.data(), n, bits, group, out.data());
    for (int64_t i = 0; i < n; ++i) sum[i] += out[i], sum_sq[i] += double(out[i]) * out[i];
  }
  for (int64_t i = 0; i < n; ++i) {
    const double mean = sum[i] / trials, variance = sum_sq[i] / trials - mean * mean;
    EXPECT_NEAR(mean, x[i], 5 * std::sqrt(bound / trials)) << "element " << i;
    EXPECT_LE(variance, bound * 1.05) << "element " << i;
  }
}

TEST(Topk, KeepsTheLargestEntriesExactly) {
  EXPECT_EQ(topk_count(0, 0.01), 0);
  EXPECT_EQ(topk_count(10, 0.01), 1);
  EXPECT_EQ(topk_count(1000, 0.01), 10);
  EXPECT_EQ(topk_count(1001, 0.01), 11);
  EXPECT_EQ(topk_count(5, 1.0), 5);
  const std::vector<float> x = {0.1f, -3.0f, 2.0f, 0.5f, -2.0f, 2.0f, 0.0f, 1.0e-7f};
  std::vector<uint8_t> wire(3 * 8);
  topk_encode(x.data(), static_cast<int64_t>(x.size()), 3, wire.data());
  std::vector<float> out(x.size(), 0.0f);
  topk_decode_add(wire.data(), 3, out.data());
  // -3 and the two 2.0 of the lowest indices (2 and 4 tie with 5 in magnitude; 2, 4 win).
  EXPECT_EQ(out, (std::vector<float>{0, -3.0f, 2.0f, 0, -2.0f, 0, 0, 0}));
  uint32_t first_index = 0;
  std::memcpy(&first_index, wire.data(), 4);
  EXPECT_EQ(first_index, 1u);  // pairs in index order
  // All equal: the lowest indices. A NaN counts as the largest (no undefined selection).
  const std::vector<float> same = {0.5f, -0.5f, 0.5f, 0.5f};
  std::vector<float> kept(4, 0.0f);
  topk_encode(same.data(), 4, 2, wire.data());
  topk_decode_add(wire.data(), 2, kept.data());
  EXPECT_EQ(kept, (std::vector<float>{0.5f, -0.5f, 0, 0}));
  const std::vector<float> with_nan = {1.0f, NAN, -2.0f};
  std::vector<float> kept_nan(3, 0.0f);
  topk_encode(with_nan.data(), 3, 1, wire.data());
  topk_decode_add(wire.data(), 1, kept_nan.data());
  EXPECT_TRUE(std::isnan(kept_nan[1]));
}

TEST(PowerSgd, OrthonormalisesColumns) {
  const int64_t rows = 7, r = 3;
  std::vector<float> p(rows * r);
  Rng rng(5);
  for (float& v : p) v = static_cast<float>(rng.normal());
  orthonormalise_columns(p.data(), rows, r);
  for (int64_t a = 0; a < r; ++a)
    for (int64_t b = 0; b < r; ++b) {
      double dot = 0;
      for (int64_t i = 0; i < rows; ++i) dot += double(p[i * r + a]) * p[i * r + b];
      EXPECT_NEAR(dot, a == b ? 1.0 : 0.0, 1e-5);
    }
  // A column in the span of the others becomes zero.
  std::vector<float> q = {1, 2, 2, 4, 3, 6};  // 3 x 2, column 2 = 2 column 1
  orthonormalise_columns(q.data(), 3, 2);
  EXPECT_EQ(q[1], 0.0f);
  EXPECT_EQ(q[5], 0.0f);
}

// A bucket of one rank-2 matrix (8 x 6), a matrix whose rank-2 form would not be smaller (2 x 3)
// and 5 bias values: with r = 2 the matrix comes back within rounding, the rest exactly, and
// the bucket sends (8 + 6) * 2 + 6 + 5 floats.
TEST(PowerSgd, ExactForAMatrixOfRankAtMostR) {
  auto comm = Communicator::self();
  CompressionOptions options;
  options.kind = CompressionKind::powersgd;
  options.powersgd_rank = 2;
  options.matrices = {{0, 8, 6}, {48, 2, 3}};
  const int64_t n = 48 + 6 + 5;
  std::vector<float> data(n);
  for (int64_t i = 0; i < 8; ++i)
    for (int64_t k = 0; k < 6; ++k) data[i * 6 + k] = float((i + 1) * (k - 2)) + 0.5f * float((i % 3) * (k % 2));
  for (int64_t i = 48; i < n; ++i) data[i] = 0.25f * float(i);
  const std::vector<float> input = data;
  for (bool warm : {true, false}) {
    options.powersgd_warm_start = warm;
    auto compressor = make_compressor(options, AllreduceAlgorithm::mpi, 0);
    for (int64_t step = 0; step < 3; ++step) {
      data = input;
      std::vector<float> sent(n);
      CompressionCost cost;
      compressor->exchange(*comm, {0, n, 0, step}, data.data(), sent.data(), cost);
      for (int64_t i = 0; i < 48; ++i) EXPECT_NEAR(data[i], input[i], 1e-4 * 20) << "element " << i;
      for (int64_t i = 48; i < n; ++i) EXPECT_EQ(data[i], input[i]) << "element " << i;
      for (int64_t i = 48; i < n; ++i) EXPECT_EQ(sent[i], input[i]);  // nothing left for error feedback
      EXPECT_EQ(cost.wire_bytes, ((8 + 6) * 2 + 6 + 5) * 4);
    }
  }
}

// A bucket that starts inside a matrix compresses only the matrix's rows that lie wholly in it.
TEST(PowerSgd, CompressesOnlyWholeRowsInTheBucket) {
  auto comm = Communicator::self();
  CompressionOptions options;
  options.kind = CompressionKind::powersgd;
  options.powersgd_rank = 1;
  options.matrices = {{0, 10, 8}};  // bucket [13, 80): rows 2..9 whole, elements 13..15 of row 1
  std::vector<float> data(67);
  for (int64_t i = 0; i < 67; ++i) data[i] = float(((i + 13) / 8 + 1) * ((i + 13) % 8 + 1));  // rank 1
  const std::vector<float> input = data;
  auto compressor = make_compressor(options, AllreduceAlgorithm::mpi, 0);
  CompressionCost cost;
  compressor->exchange(*comm, {13, 67, 0, 0}, data.data(), nullptr, cost);
  for (int64_t i = 0; i < 67; ++i) EXPECT_NEAR(data[i], input[i], 1e-3) << "element " << i;
  EXPECT_EQ(cost.wire_bytes, ((8 + 8) * 1 + 3) * 4);
}

// Error feedback with topk (k = 1 of 3) over a hand-computed sequence of dyadic values (exact
// in fp32): each step sends the largest of g + e and keeps the rest for the next.
TEST(ErrorFeedback, CarriesWhatWasNotSentExactly) {
  auto comm = Communicator::self();
  CompressionOptions options;
  options.kind = CompressionKind::topk;
  options.topk_ratio = 0.3;  // k = ceil(0.9) = 1
  auto compressor = make_compressor(options, AllreduceAlgorithm::mpi, 0);
  ErrorFeedback feedback(5);  // the arena: 2 elements before the bucket [2, 5)
  const std::vector<std::vector<float>> grads = {{1.0f, 0.5f, -0.25f}, {0.25f, 0.25f, 0.25f}, {0.0f, 0.0f, 0.5f}};
  const std::vector<std::vector<float>> sent_expected = {{1.0f, 0, 0}, {0, 0.75f, 0}, {0, 0, 0.5f}};
  const std::vector<std::vector<float>> memory_expected = {{0, 0.5f, -0.25f}, {0.25f, 0, 0}, {0.25f, 0, 0}};
  for (size_t step = 0; step < grads.size(); ++step) {
    std::vector<float> data = grads[step], input(3), sent(3);
    feedback.add_memory(2, data.data(), 3);
    input = data;
    CompressionCost cost;
    compressor->exchange(*comm, {2, 3, 0, static_cast<int64_t>(step)}, data.data(), sent.data(), cost);
    feedback.keep_residual(2, input.data(), sent.data(), 3);
    EXPECT_EQ(data, sent_expected[step]) << "step " << step;  // one rank: the mean is what it sent
    EXPECT_EQ(std::vector<float>(feedback.memory().begin() + 2, feedback.memory().end()), memory_expected[step])
        << "step " << step;
    EXPECT_EQ(feedback.memory()[0], 0.0f);
    EXPECT_EQ(cost.wire_bytes, 8);
  }
}

TEST(Compression, NamesAndDefaults) {
  for (CompressionKind kind : all_compression_kinds()) EXPECT_STRNE(compression_kind_name(kind), "?");
  EXPECT_TRUE(compression_is_biased(CompressionKind::topk));
  EXPECT_TRUE(compression_is_biased(CompressionKind::powersgd));
  EXPECT_FALSE(compression_is_biased(CompressionKind::qsgd));
  CompressionOptions options;
  EXPECT_FALSE(options.enabled());
  options.kind = CompressionKind::topk;
  EXPECT_TRUE(options.error_feedback_on());
  options.error_feedback = ErrorFeedbackMode::off;
  EXPECT_FALSE(options.error_feedback_on());
  options.kind = CompressionKind::fp16;
  options.error_feedback = ErrorFeedbackMode::auto_;
  EXPECT_FALSE(options.error_feedback_on());
  options.kind = CompressionKind::none;
  EXPECT_THROW(make_compressor(options, AllreduceAlgorithm::mpi, 0), RuntimeError);
}

namespace {

std::string config_error(const std::string& yaml) {
  try {
    parse_run_config(yaml, "cfg.yaml", {});
  } catch (const ConfigError& e) {
    return e.what();
  }
  return "";
}

}  // namespace

// The dist.compression keys: typed, defaulted when unset (configs without them keep their
// config_id), and refused where they cannot apply, naming the key.
TEST(CompressionConfig, KeysParseAndImpossibleCombinationsAreRefused) {
  const ResolvedConfig plain = parse_run_config("model: lenet\n", "cfg.yaml", {});
  EXPECT_EQ(plain.run.dist.compression.kind, CompressionKind::none);
  EXPECT_EQ(plain.flat.count("dist.compression"), 0u);
  const ResolvedConfig c = parse_run_config(
      "dist: {compression: powersgd, powersgd_rank: 2, powersgd_warm_start: false, error_feedback: off, "
      "compression_warmup_steps: 10}\n", "cfg.yaml", {});
  EXPECT_EQ(c.run.dist.compression.kind, CompressionKind::powersgd);
  EXPECT_EQ(c.run.dist.compression.powersgd_rank, 2);
  EXPECT_FALSE(c.run.dist.compression.powersgd_warm_start);
  EXPECT_EQ(c.run.dist.compression.error_feedback, ErrorFeedbackMode::off);
  EXPECT_EQ(c.run.dist.compression.warmup_steps, 10);
  EXPECT_NE(config_error("dist: {compression: gzip}\n").find("topk"), std::string::npos);
  EXPECT_NE(config_error("dist: {compression: qsgd, qsgd_bits: 9}\n").find("dist.qsgd_bits"), std::string::npos);
  EXPECT_NE(config_error("dist: {compression: topk, topk_ratio: 0}\n").find("dist.topk_ratio"), std::string::npos);
  EXPECT_NE(config_error("dist: {compression: topk, qsgd_bits: 4}\n").find("applies to dist.compression qsgd"),
            std::string::npos);
  EXPECT_NE(config_error("dist: {error_feedback: on}\n").find("dist.compression is none"), std::string::npos);
  EXPECT_NE(config_error("dist: {strategy: weight_avg, compression: fp16}\n").find("dist.strategy sync"),
            std::string::npos);
  EXPECT_EQ(config_error("dist: {compression: topk}\ncheckpoint: {every_steps: 10}\n"), "")
      << "compressed runs are checkpointed (the error-feedback memory travels in the checkpoint)";
  EXPECT_NE(config_error("dist: {compression: topk, allreduce: ps}\n").find("dist.allreduce ps"), std::string::npos);
}

// The factory refuses what the bucket path does not implement (the run's check at start-up).
TEST(CompressionConfig, StrategiesWithoutCompressionRefuseIt) {
  auto comm = Communicator::self();
  std::vector<float> params(8), grads(8);
  ExchangeOptions options;
  options.compression.kind = CompressionKind::topk;
  options.algorithm = AllreduceAlgorithm::ps;
  options.overlap = false;
  const ModelArenas arenas{params.data(), grads.data(), 8, nullptr, 0, {}};
  EXPECT_THROW(make_exchange_strategy(*comm, arenas, options), ConfigError);
  options.algorithm = AllreduceAlgorithm::ring;
  options.strategy = DistStrategy::weight_avg;
  EXPECT_THROW(make_exchange_strategy(*comm, arenas, options), ConfigError);
  options.strategy = DistStrategy::sync;
  EXPECT_TRUE(make_exchange_strategy(*comm, arenas, options)->records_compression());
}
