// Compressed gradient exchanges across ranks (under mpiexec, 2, 3 and 4 ranks; both MPI
// flavors): each compressor's exchange equals the reference computed on every rank from all
// ranks' inputs (qsgd and topk bit for bit, fp16/bf16 bit for bit on 2 ranks, PowerSGD the exact
// mean of rank-1 matrices); every rank ends with the same bits; sync with compression none, or
// still in its uncompressed warm-up, is bit-identical to plain sync.
#include <gtest/gtest.h>
#include <mpi.h>

#include <cmath>
#include <cstring>
#include <vector>

#include "backend/backend_factory.h"
#include "core/rng.h"
#include "dist/compressor.h"
#include "dist/half_codec.h"
#include "dist/qsgd_compressor.h"
#include "dist/topk_compressor.h"

#include "exchange_harness.h"
#include "mpi_test_environment.h"

using namespace ts;
using namespace ts::testing_support;

namespace {

constexpr int64_t kCount = 3001;

// Rank r's gradient bucket (every rank can compute every rank's).
std::vector<float> input_of(int rank) {
  std::vector<float> x(kCount);
  Rng rng(seed_mix(42, static_cast<uint64_t>(rank)));
  for (float& v : x) v = static_cast<float>(rng.normal()) * (rank + 1);
  return x;
}

void expect_same_on_all_ranks(const std::vector<float>& got, const std::string& what) {
  std::vector<float> root = got;
  ASSERT_EQ(MPI_Bcast(root.data(), static_cast<int>(root.size()), MPI_FLOAT, 0, MPI_COMM_WORLD), MPI_SUCCESS);
  EXPECT_EQ(std::memcmp(root.data(), got.data(), got.size() * sizeof(float)), 0) << what << ": ranks disagree";
}

std::vector<float> exchanged(Communicator& comm, const CompressionOptions& options, std::vector<float> data,
                             int64_t step = 0) {
  auto compressor = make_compressor(options, AllreduceAlgorithm::ring, comm.rank());
  CompressionCost cost;
  compressor->exchange(comm, {0, static_cast<int64_t>(data.size()), 3, step}, data.data(), nullptr, cost);
  return data;
}

}  // namespace

TEST(MpiCompression, QsgdEqualsTheMeanOfEveryRanksDecodedBucket) {
  auto comm = Communicator::world();
  CompressionOptions options;
  options.kind = CompressionKind::qsgd;
  options.qsgd_bits = 4;
  options.qsgd_bucket = 128;
  options.seed = 9;
  const std::vector<float> got = exchanged(*comm, options, input_of(comm->rank()), 5);
  std::vector<float> want(kCount, 0.0f);
  std::vector<uint8_t> wire(static_cast<size_t>(qsgd_wire_bytes(kCount, 4, 128)));
  for (int r = 0; r < comm->size(); ++r) {  // as each rank encoded its own (seed, rank, step, bucket)
    Rng rng(seed_mix(9, static_cast<uint64_t>(r), seed_mix(5, 3)));
    qsgd_encode(input_of(r).data(), kCount, 4, 128, rng, wire.data());
    qsgd_decode_add(wire.data(), kCount, 4, 128, want.data());
  }
  for (float& v : want) v *= 1.0f / static_cast<float>(comm->size());
  EXPECT_EQ(got, want);
  expect_same_on_all_ranks(got, "qsgd");
}

TEST(MpiCompression, TopkEqualsTheMeanOfEveryRanksLargestEntries) {
  auto comm = Communicator::world();
  CompressionOptions options;
  options.kind = CompressionKind::topk;
  options.topk_ratio = 0.01;
  const std::vector<float> got = exchanged(*comm, options, input_of(comm->rank()));
  const int64_t k = topk_count(kCount, 0.01);
  std::vector<float> want(kCount, 0.0f);
  std::vector<uint8_t> wire(static_cast<size_t>(k * 8));
  for (int r = 0; r < comm->size(); ++r) {
    topk_encode(input_of(r).data(), kCount, k, wire.data());
    topk_decode_add(wire.data(), k, want.data());
  }
  for (float& v : want) v *= 1.0f / static_cast<float>(comm->size());
  EXPECT_EQ(got, want);
  int64_t nonzero = 0;
  for (float v : got) nonzero += v != 0;
  EXPECT_LE(nonzero, k * comm->size());
  expect_same_on_all_ranks(got, "topk");
}

// Each rank sends x / N rounded to 16 bits; the all-reduce adds in fp32 and rounds each sum. On
// 2 ranks that is one addition: the result is known exactly. On more, the order of additions is
// the MPI library's: within one rounding per addition.
TEST(MpiCompression, HalfPrecisionAllReduceMatchesTheRoundedSum) {
  auto comm = Communicator::world();
  const int world = comm->size();
  for (CompressionKind kind : {CompressionKind::fp16, CompressionKind::bf16}) {
    const bool fp16 = kind == CompressionKind::fp16;
    auto round = [fp16](float x) { return fp16 ? float_from_fp16(fp16_from_float(x)) : float_from_bf16(bf16_from_float(x)); };
    CompressionOptions options;
    options.kind = kind;
    const std::vector<float> got = exchanged(*comm, options, input_of(comm->rank()));
    std::vector<std::vector<float>> inputs;
    for (int r = 0; r < world; ++r) inputs.push_back(input_of(r));
    const double ulp = fp16 ? std::ldexp(1.0, -10) : std::ldexp(1.0, -7);
    for (int64_t i = 0; i < kCount; ++i) {
      double exact = 0, magnitude = 0;
      for (int r = 0; r < world; ++r) exact += inputs[r][i] / world, magnitude += std::fabs(inputs[r][i] / world);
      if (world == 2) {
        ASSERT_EQ(got[i], round(round(inputs[0][i] / 2.0f) + round(inputs[1][i] / 2.0f))) << compression_kind_name(kind) << " " << i;
      } else {
        ASSERT_NEAR(got[i], exact, magnitude * ulp * world + 1e-6) << compression_kind_name(kind) << " " << i;
      }
    }
    expect_same_on_all_ranks(got, compression_kind_name(kind));
  }
}

// Rank r holds (r + 1) u v^T (rank 1) in a 40 x 30 matrix and dyadic biases: with r = 2 the
// exchange gives the mean matrix (rank 1) within rounding and the mean biases exactly.
TEST(MpiCompression, PowerSgdGivesTheMeanOfLowRankMatrices) {
  auto comm = Communicator::world();
  const int world = comm->size();
  const int64_t rows = 40, cols = 30, biases = 7, n = rows * cols + biases;
  CompressionOptions options;
  options.kind = CompressionKind::powersgd;
  options.powersgd_rank = 2;
  options.matrices = {{0, rows, cols}};
  auto matrix_of = [&](int r) {
    std::vector<float> x(n);
    for (int64_t i = 0; i < rows; ++i)
      for (int64_t k = 0; k < cols; ++k) x[i * cols + k] = float(r + 1) * std::sin(0.1f * i + 1) * std::cos(0.2f * k);
    for (int64_t b = 0; b < biases; ++b) x[rows * cols + b] = 0.5f * float(r) + float(b);
    return x;
  };
  for (int64_t step = 0; step < 3; ++step) {  // warm start: later steps start from the kept Q
    auto compressor = make_compressor(options, AllreduceAlgorithm::ring, comm->rank());
    std::vector<float> got = matrix_of(comm->rank());
    CompressionCost cost;
    compressor->exchange(*comm, {0, n, 0, step}, got.data(), nullptr, cost);
    std::vector<float> mean(n, 0.0f);
    for (int r = 0; r < world; ++r) {
      const std::vector<float> x = matrix_of(r);
      for (int64_t i = 0; i < n; ++i) mean[i] += x[i] / world;
    }
    for (int64_t i = 0; i < rows * cols; ++i) ASSERT_NEAR(got[i], mean[i], 1e-4 * world) << "element " << i;
    for (int64_t b = rows * cols; b < n; ++b) EXPECT_FLOAT_EQ(got[b], mean[b]);
    EXPECT_EQ(cost.wire_bytes, ((rows + cols) * 2 + biases) * 4);
    expect_same_on_all_ranks(got, "powersgd");
  }
}

// Plain sync, sync with compression none and sync still in its compression warm-up take the
// same path: the same bits after four steps of the shared harness (several buckets, the tail).
TEST(MpiCompression, NoneAndWarmUpAreBitIdenticalToPlainSync) {
  auto comm = Communicator::world();
  auto backend = make_backend("ref");
  ExchangeOptions plain;
  plain.algorithm = AllreduceAlgorithm::ring;
  plain.bucket_elements = kBucket;
  plain.overlap = false;
  const ExchangeRun want = run_exchange(*backend, *comm, plain);
  ExchangeOptions none = plain;
  none.compression.kind = CompressionKind::none;
  none.compression.error_feedback = ErrorFeedbackMode::on;  // ignored without a compressor
  const ExchangeRun got_none = run_exchange(*backend, *comm, none);
  EXPECT_EQ(got_none.params, want.params);
  ExchangeOptions warming = plain;
  warming.compression.kind = CompressionKind::topk;
  warming.compression.warmup_steps = 4;  // = the harness's steps
  const ExchangeRun got_warming = run_exchange(*backend, *comm, warming);
  EXPECT_EQ(got_warming.params, want.params);
  expect_same_run(got_warming, want, 0, "warm-up");
}

// Every compressor in sync's bucket path: the ranks keep identical weights (every rank applies
// the same decoded mean), the loss still travels exactly, and the weights stay near plain sync's.
TEST(MpiCompression, CompressedSyncKeepsReplicasIdentical) {
  auto comm = Communicator::world();
  auto backend = make_backend("ref");
  ExchangeOptions plain;
  plain.algorithm = AllreduceAlgorithm::ring;
  plain.bucket_elements = kBucket;
  plain.overlap = false;
  const ExchangeRun want = run_exchange(*backend, *comm, plain);
  for (CompressionKind kind : all_compression_kinds()) {
    ExchangeOptions options = plain;
    options.compression.kind = kind;
    options.compression.topk_ratio = 0.1;
    options.compression.matrices = {{0, 100, 300}, {40000, 150, 200}};  // one split across buckets
    const ExchangeRun got = run_exchange(*backend, *comm, options);
    expect_same_on_all_ranks(got.params, compression_kind_name(kind));
    ASSERT_EQ(got.verdicts.size(), want.verdicts.size());
    for (size_t s = 0; s < want.verdicts.size(); ++s) EXPECT_EQ(got.verdicts[s].loss, want.verdicts[s].loss);
    // lr 0.1 x 4 steps x |g| <= 0.05: weights move at most 0.02 (momentum 0.9 adds a little).
    for (size_t i = 0; i < want.params.size(); ++i)
      ASSERT_NEAR(got.params[i], want.params[i], 0.05) << compression_kind_name(kind) << " param " << i;
  }
}
