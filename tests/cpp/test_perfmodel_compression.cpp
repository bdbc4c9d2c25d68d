// The performance model's compressed exchanges (docs/model.md "Compressed exchanges") against
// hand-computed values: the all-gather, each compressor's bytes (the trainer's formulas, docs/
// compression.md), its codec time from the cluster file's rates, error feedback, PowerSGD on the
// model's weight matrices; the rates' section of a cluster file read, written and refused.
#include <gtest/gtest.h>

#include <cmath>
#include <string>

#include "core/error.h"
#include "perfmodel/allreduce_model.h"
#include "perfmodel/cluster.h"
#include "perfmodel/compression_model.h"
#include "perfmodel/layer_costs.h"

using namespace ts;
using namespace ts::perf;

namespace {

// One node of 8 cores, a shared-memory star with alpha 1 us and 8 Gbit/s (1 ns per byte), and
// codec rates in round numbers (ns per element).
const char* kNode = R"(name: node
nodes: 1
node: {cores: 8, peak_gflops: {fp32: 100}, memory_bandwidth_gbs: 16}
interconnect: {topology: star, alpha_us: 1, bandwidth_gbps: 8}
mpi: {allreduce: ring}
calibration:
  compression:
    fp16: {encode_ns: 1, decode_ns: 2}
    qsgd: {encode_ns: 5, decode_ns: 4}
    topk: {encode_ns: 8, decode_ns: 0.5, ratio: 0.02}
    powersgd: {encode_ns: 3, decode_ns: 1, rank: 2}
)";

struct Rig {
  explicit Rig(int64_t workers)
      : cluster(parse_cluster_file(kNode, "node.yaml")),
        placement(place_workers(cluster, workers, 1)),
        ring(cluster, "ring", placement),
        mpi(cluster, "mpi", placement),
        rate(worker_rate(cluster, placement, "fp32")) {}
  CompressionModel model(CompressionOptions o) const { return CompressionModel(o, cluster, ring, mpi, rate, placement.workers); }
  ClusterSpec cluster;
  Placement placement;
  AllreduceModel ring, mpi;
  WorkerRate rate;
};

CompressionOptions options(CompressionKind kind) {
  CompressionOptions o;
  o.kind = kind;
  return o;
}

}  // namespace

TEST(CompressionModel, AllgatherIsTheBucketAlgorithmsOnAStar) {
  const Rig rig(4);
  // (p - 1) alpha + (p - 1) B beta: 3 x 1 us + 3 x 1000 bytes x 1 ns.
  EXPECT_NEAR(rig.mpi.allgather_seconds(1000), 3e-6 + 3e-6, 1e-12);
  EXPECT_EQ(Rig(1).mpi.allgather_seconds(1000), 0.0);
}

TEST(CompressionModel, SixteenBitAndQsgdAndTopkByHand) {
  const Rig rig(4);
  const int64_t n = 100000;
  const CompressedBucketCost half = rig.model(options(CompressionKind::fp16)).bucket(0, n, false);
  EXPECT_DOUBLE_EQ(half.wire_bytes, 2.0 * n);
  EXPECT_NEAR(half.encode, 1e-9 * n, 1e-15);
  EXPECT_NEAR(half.decode, 2e-9 * n, 1e-15);  // the all-reduce's sum, decoded once
  EXPECT_DOUBLE_EQ(half.wire, rig.mpi.seconds(2.0 * n));
  EXPECT_EQ(half.feedback, 0.0);  // unbiased: no error feedback by default

  CompressionOptions q = options(CompressionKind::qsgd);  // 8 bits, groups of 512
  const CompressedBucketCost qs = rig.model(q).bucket(0, n, false);
  EXPECT_DOUBLE_EQ(qs.wire_bytes, 4.0 * std::ceil(n / 512.0) + n);
  EXPECT_DOUBLE_EQ(qs.wire, rig.mpi.allgather_seconds(qs.wire_bytes));
  EXPECT_NEAR(qs.decode, 4 * 4e-9 * n, 1e-15);  // every rank's buffer decoded

  CompressionOptions t = options(CompressionKind::topk);
  t.topk_ratio = 0.01;  // the rate was measured at 0.02: decoding follows k, half as many
  const CompressedBucketCost top = rig.model(t).bucket(0, n, false);
  EXPECT_DOUBLE_EQ(top.wire_bytes, 8.0 * 1000);
  EXPECT_NEAR(top.encode, 8e-9 * n, 1e-15);
  EXPECT_NEAR(top.decode, 4 * 0.5e-9 * n * 0.5, 1e-15);
  // Error feedback (on for topk): 32 bytes per element at the worker's bandwidth (16 GB/s over
  // 8 cores, one core: 2 GB/s).
  EXPECT_NEAR(top.feedback, 32.0 * n / 2e9, 1e-12);
  // The tail adds the loss's all-reduce of two floats; one worker moves nothing.
  EXPECT_DOUBLE_EQ(rig.model(t).bucket(0, n, true).wire, top.wire + rig.ring.seconds(8.0));
  EXPECT_EQ(Rig(1).model(t).bucket(0, n, true).seconds(), 0.0);
}

TEST(CompressionModel, PowerSgdOnWholeRowsOfTheBucketsMatrices) {
  const Rig rig(2);
  CompressionOptions o = options(CompressionKind::powersgd);
  o.powersgd_rank = 4;  // measured at 2: the products cost twice as much
  // A 100 x 50 matrix, a 10-float bias, then a 3 x 2 matrix that rank 4 does not compress.
  o.matrices = {{0, 100, 50}, {5010, 3, 2}};
  const CompressionModel model(o, rig.cluster, rig.ring, rig.mpi, rig.rate, 2);
  const CompressedBucketCost c = model.bucket(0, 5016, false);
  const double p_floats = 100 * 4, q_floats = 50 * 4, plain = 10 + 6;
  EXPECT_DOUBLE_EQ(c.wire_bytes, 4.0 * (p_floats + q_floats + plain));
  EXPECT_NEAR(c.encode, 3e-9 * 5000 * 2, 1e-15);
  EXPECT_NEAR(c.decode, 1e-9 * 5000 * 2, 1e-15);
  EXPECT_DOUBLE_EQ(c.wire, rig.ring.average_seconds(4.0 * p_floats) + rig.ring.average_seconds(4.0 * (q_floats + plain)));
  // A bucket edge through the matrix: the 40 whole rows on this side are compressed.
  const CompressedBucketCost cut = model.bucket(0, 2025, false);
  EXPECT_DOUBLE_EQ(cut.wire_bytes, 4.0 * (40 * 4 + 50 * 4 + 25));
  // Both edges inside rows ([25, 2025): 2,000 floats, 39 whole rows, from row 1): the trainer's
  // rows (powersgd_rows), not the 40 rows' worth of floats.
  const CompressedBucketCost inner = model.bucket(25, 2000, false);
  EXPECT_DOUBLE_EQ(inner.wire_bytes, 4.0 * (39 * 4 + 50 * 4 + (2000 - 39 * 50)));
}

TEST(CompressionModel, LenetWeightMatricesAreTheTrainers) {
  ModelWorkRequest r;
  r.model = "lenet";
  const std::vector<WeightMatrix> m = weight_matrices_of_work(model_work(r));
  // conv1 (32, 1x5x5) + 32 biases, conv2 (64, 32x5x5) + 64, fc1 (512, 3136) + 512, fc2 (10, 512).
  ASSERT_EQ(m.size(), 4u);
  const int64_t expected[4][3] = {{0, 32, 25}, {832, 64, 800}, {52096, 512, 3136}, {1658240, 10, 512}};
  for (size_t i = 0; i < 4; ++i) {
    EXPECT_EQ(m[i].offset, expected[i][0]) << i;
    EXPECT_EQ(m[i].rows, expected[i][1]) << i;
    EXPECT_EQ(m[i].cols, expected[i][2]) << i;
  }
}

TEST(CompressionModel, RatesRoundTripAndAreRequired) {
  const ClusterSpec spec = parse_cluster_file(kNode, "node.yaml");
  const ClusterSpec again = parse_cluster_file(cluster_yaml(spec), "again.yaml");
  ASSERT_EQ(again.calibration.compression.size(), 4u);
  EXPECT_DOUBLE_EQ(again.calibration.compression.at("topk").parameter, 0.02);
  EXPECT_NEAR(again.calibration.compression.at("qsgd").encode_s_per_element, 5e-9, 1e-18);
  const Rig rig(2);
  try {
    rig.model(options(CompressionKind::bf16));
    FAIL() << "bf16 has no rate in node.yaml";
  } catch (const ConfigError& e) {
    EXPECT_NE(std::string(e.what()).find("node.yaml has no calibration.compression.bf16"), std::string::npos) << e.what();
    EXPECT_NE(std::string(e.what()).find("trainscale calibrate"), std::string::npos);
  }
  std::string bad = kNode;
  bad.replace(bad.find("ratio: 0.02"), 11, "rank: 2");
  try {
    parse_cluster_file(bad, "bad.yaml");
    FAIL() << "topk's parameter is its ratio";
  } catch (const ConfigError& e) {
    EXPECT_NE(std::string(e.what()).find("calibration.compression.topk: unknown key 'rank'"), std::string::npos) << e.what();
  }
}
