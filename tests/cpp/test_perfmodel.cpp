// The performance model's formulas against hand-computed values (docs/model.md): lenet's
// per-layer GEMMs and FLOPs, the blocked intensity of the Skylake blocking, the MST / BKT
// all-reduce costs on a star and a mesh, the roofline, the step with and without overlap, and
// the cluster files (the shipped ones parse; malformed ones fail naming file, line and key).
#include <cmath>
#include <gtest/gtest.h>

#include <string>

#include "core/error.h"
#include "perfmodel/allreduce_model.h"
#include "perfmodel/cluster.h"
#include "perfmodel/collectives.h"
#include "perfmodel/gemm_model.h"
#include "perfmodel/layer_costs.h"
#include "perfmodel/predict.h"
#include "perfmodel/step_model.h"

using namespace ts;
using namespace ts::perf;

namespace {

const std::string kSource = TRAINSCALE_SOURCE_DIR;

const LayerWork& layer_named(const std::vector<LayerWork>& layers, const std::string& name) {
  for (const LayerWork& l : layers)
    if (l.name == name) return l;
  throw std::runtime_error("no layer " + name);
}

std::string error_of(const std::string& yaml) {
  try {
    parse_cluster_file(yaml, "bad.yaml");
  } catch (const ConfigError& e) {
    return e.what();
  }
  return "";
}

const char* kTiny = R"(name: tiny
nodes: 4
node: {cores: 4, peak_gflops: {fp32: 100}, memory_bandwidth_gbs: 10}
interconnect: {topology: star, alpha_us: 1, bandwidth_gbps: 8}
)";

}  // namespace

TEST(Gemm, FlopsBytesAndIntensityOfAGemm) {
  const GemmShape g{64, 512, 3136, 1};
  EXPECT_DOUBLE_EQ(gemm_flops(g), 2.0 * 64 * 512 * 3136);
  EXPECT_DOUBLE_EQ(gemm_bytes(g, 4), (64.0 * 512 + 64.0 * 3136 + 3136.0 * 512) * 4);
  EXPECT_DOUBLE_EQ(gemm_intensity(g, 4), gemm_flops(g) / gemm_bytes(g, 4));
  EXPECT_DOUBLE_EQ(gemm_flops(GemmShape{2, 3, 4, 5}), 2.0 * 2 * 3 * 4 * 5);  // groups
}

TEST(Gemm, BlockedIntensityOfTheSkylakeBlocking) {
  // 2 mc nc kc / ((mc nc + mc kc + kc nc) delta) with mc 480, nc 3072, kc 384, fp32:
  // 1,132,462,080 / 11,354,112 = 99.740 flops per byte.
  const GemmBlocking skx{480, 3072, 384};
  const GemmShape big{10000, 10000, 10000, 1};
  EXPECT_NEAR(blocked_intensity(big, skx, 4), 1132462080.0 / 11354112.0, 1e-9);
  EXPECT_NEAR(blocked_intensity(big, skx, 4), 99.740, 1e-3);
  // A GEMM smaller than a block uses its own sizes: m 64, n 3072 (cut), k 384 (cut).
  const GemmShape small{64, 12544, 800, 1};
  EXPECT_NEAR(blocked_intensity(small, skx, 4), 2.0 * 64 * 3072 * 384 / ((64.0 * 3072 + 64.0 * 384 + 384.0 * 3072) * 4), 1e-9);
  // Without a blocking: the whole GEMM's intensity.
  EXPECT_DOUBLE_EQ(blocked_intensity(small, GemmBlocking{}, 4), gemm_intensity(small, 4));
}

TEST(Roofline, ComputeAndMemoryBound) {
  const WorkerRate rate{8960e9, 128e9};  // the Skylake node: ridge at 70 flops per byte
  RooflineTime t = roofline_time(8960e9, 1e9, 99.74, rate);
  EXPECT_EQ(t.bound, Bound::compute);
  EXPECT_NEAR(t.seconds, 1.0, 1e-12);
  t = roofline_time(128e9, 1e9, 10, rate);  // 10 x 128 GB/s = 1280 GFLOP/s
  EXPECT_EQ(t.bound, Bound::memory);
  EXPECT_NEAR(t.seconds, 0.1, 1e-12);
  t = roofline_time(8960e9, 1e9, 99.74, rate, 0.5);  // a calibrated efficiency doubles it
  EXPECT_NEAR(t.seconds, 2.0, 1e-12);
  t = roofline_time(0, 256e9, 0, rate);  // a copy: bytes / bandwidth
  EXPECT_EQ(t.bound, Bound::memory);
  EXPECT_NEAR(t.seconds, 2.0, 1e-12);
}

TEST(LayerWork, LenetGemmsAndFlopsByHand) {
  ModelWorkRequest r;
  r.model = "lenet";
  r.batch = 64;
  const std::vector<LayerWork> layers = model_work(r);
  ASSERT_EQ(layers.size(), 10u);  // conv relu pool conv relu pool fc relu fc loss (no dropout)
  const LayerWork& conv1 = layer_named(layers, "conv1");
  // FP: m = oc 32, n = mb oh ow = 64 x 28 x 28, k = ic kh kw = 25.
  EXPECT_EQ(conv1.of(Pass::fp).gemm.m, 32);
  EXPECT_EQ(conv1.of(Pass::fp).gemm.n, 64 * 784);
  EXPECT_EQ(conv1.of(Pass::fp).gemm.k, 25);
  EXPECT_DOUBLE_EQ(conv1.of(Pass::fp).flops, 80281600.0);
  EXPECT_DOUBLE_EQ(conv1.of(Pass::bp_gc).flops, 0.0);  // reads the image: no input gradient
  EXPECT_DOUBLE_EQ(conv1.of(Pass::bp_wu).flops, 80281600.0);
  EXPECT_EQ(conv1.of(Pass::bp_wu).gemm.k, 64 * 784);
  const LayerWork& conv2 = layer_named(layers, "conv2");
  EXPECT_DOUBLE_EQ(conv2.of(Pass::fp).flops, 2.0 * 64 * (64 * 196) * (32 * 25));  // 1,284,505,600
  EXPECT_EQ(conv2.of(Pass::bp_gc).gemm.m, 800);
  EXPECT_EQ(conv2.of(Pass::bp_gc).gemm.k, 64);
  EXPECT_DOUBLE_EQ(conv2.of(Pass::bp_gc).flops, conv2.of(Pass::fp).flops);
  const LayerWork& fc1 = layer_named(layers, "fc1");
  EXPECT_DOUBLE_EQ(fc1.of(Pass::fp).flops, 2.0 * 64 * 512 * 3136);  // 205,520,896
  EXPECT_EQ(fc1.of(Pass::bp_wu).gemm.m, 512);
  EXPECT_EQ(fc1.of(Pass::bp_wu).gemm.n, 3136);
  EXPECT_EQ(fc1.of(Pass::bp_wu).gemm.k, 64);
  EXPECT_EQ(fc1.parameters, 3136 * 512 + 512);
  EXPECT_DOUBLE_EQ(layer_named(layers, "fc2").of(Pass::fp).flops, 655360.0);
  // relu1 follows conv1 alone: fused (no forward traffic), its backward still moves memory.
  EXPECT_TRUE(layer_named(layers, "relu1").fused);
  EXPECT_DOUBLE_EQ(layer_named(layers, "relu1").of(Pass::fp).bytes, 0.0);
  EXPECT_DOUBLE_EQ(layer_named(layers, "relu1").of(Pass::bp_gc).bytes, 3.0 * 64 * 32 * 784 * 4);
}

TEST(LayerWork, GroupedConvolutionIsOneGemmPerGroup) {
  const auto g = conv_gemms("conv:mb1_ic32oc32_ih8iw8_kh3kw3_sh1sw1_ph1pw1_g32", 2);
  EXPECT_EQ(g[0].m, 1);
  EXPECT_EQ(g[0].n, 2 * 64);
  EXPECT_EQ(g[0].k, 9);
  EXPECT_EQ(g[0].count, 32);
}

TEST(Collectives, MstAndBktOnAStar) {
  const double m = 1e6;
  const CostTerms mst = mst_allreduce({8}, m);  // 2 log2(8) alpha + 2 log2(8) m beta + log2(8) m gamma
  EXPECT_DOUBLE_EQ(mst.latency, 6);
  EXPECT_DOUBLE_EQ(mst.bytes, 6 * m);
  EXPECT_DOUBLE_EQ(mst.reduced, 3 * m);
  const CostTerms bkt = bkt_allreduce({8}, m);  // 2 (p-1) alpha + 2 (p-1)/p m beta + (p-1)/p m gamma
  EXPECT_DOUBLE_EQ(bkt.latency, 14);
  EXPECT_DOUBLE_EQ(bkt.bytes, 1.75 * m);
  EXPECT_DOUBLE_EQ(bkt.reduced, 0.875 * m);
  // Non-powers of two round the tree's depth up.
  EXPECT_DOUBLE_EQ(mst_broadcast({5}, m).latency, 3);
  // seconds = latency alpha + bytes beta + reduced gamma.
  EXPECT_DOUBLE_EQ(bkt.seconds(1e-6, 1e-9, 1e-10), 14e-6 + 1.75e-3 + 0.875e-4);
}

TEST(Collectives, MstAndBktOnAMesh) {
  const double m = 1e6;
  // 4 x 2 mesh: BKT's latency is sum (d_k - 1) per phase = 4, its bandwidth term stays (p-1)/p.
  const CostTerms bkt = bkt_allreduce({4, 2}, m);
  EXPECT_DOUBLE_EQ(bkt.latency, 8);
  EXPECT_DOUBLE_EQ(bkt.bytes, 1.75 * m);
  EXPECT_DOUBLE_EQ(bkt.reduced, 0.875 * m);
  // MST: sum ceil(log2 d_k) = 3 steps per phase, as on the star of 8.
  const CostTerms mst = mst_allreduce({4, 2}, m);
  EXPECT_DOUBLE_EQ(mst.latency, 6);
  EXPECT_DOUBLE_EQ(mst.bytes, 6 * m);
  // 32 x 32 = 1024 nodes: 2 x 62 = 124 messages instead of 2 x 1023 on the star.
  EXPECT_DOUBLE_EQ(bkt_allreduce({32, 32}, m).latency, 124);
  EXPECT_DOUBLE_EQ(bkt_allreduce({1024}, m).latency, 2046);
  EXPECT_EQ(subgrid_dims(6, {32, 32}), (std::vector<int64_t>{3, 2}));
  EXPECT_EQ(subgrid_dims(1000, {32, 32}), (std::vector<int64_t>{32, 32}));
}

TEST(Collectives, DistributedMdAlgorithms) {
  const double m = 4096;
  EXPECT_DOUBLE_EQ(ring_allreduce(4, m).latency, 6);
  EXPECT_DOUBLE_EQ(ring_allreduce(4, m).bytes, 1.5 * m);
  EXPECT_DOUBLE_EQ(ring_allreduce(4, m).reduced, 0.75 * m);  // chunks of one slice: as unsliced
  // 16 MiB on 4 ranks: chunks of 4 slices; the last slice's addition stays on the path.
  EXPECT_DOUBLE_EQ(ring_allreduce(4, 16.0 * (1 << 20)).reduced, 1.0 * (1 << 20));
  EXPECT_DOUBLE_EQ(tree_allreduce(4, m).latency, 4);
  EXPECT_DOUBLE_EQ(tree_allreduce(4, m).reduced, 2 * m);
  EXPECT_DOUBLE_EQ(butterfly_allreduce(4, m).bytes, 2 * m);
  EXPECT_DOUBLE_EQ(butterfly_allreduce(6, m).latency, 4);  // fold in, 2 steps among 4, fold out
  EXPECT_DOUBLE_EQ(butterfly_allreduce(6, m).reduced, 3 * m);
  EXPECT_DOUBLE_EQ(rabenseifner_allreduce(4, m).latency, 4);
  EXPECT_DOUBLE_EQ(ps_allreduce(4, m).latency, 6);
  EXPECT_DOUBLE_EQ(ps_allreduce(4, m).bytes, 6 * m);
  EXPECT_DOUBLE_EQ(shm_allreduce(2, m).latency, 2);  // pair mode: K + 1, one 256 KiB step
  EXPECT_DOUBLE_EQ(shm_allreduce(4, 1 << 20).latency, 6);  // 4 steps + 2
  EXPECT_DOUBLE_EQ(ring_allreduce(1, m).seconds(1, 1, 1), 0.0);
}

TEST(AllreduceModel, PlacementAndFormulas) {
  const ClusterSpec c = parse_cluster_file(kTiny, "tiny.yaml");
  const Placement one_node = place_workers(c, 2, 2);  // 4 cores / 2 threads = 2 places
  EXPECT_EQ(one_node.nodes, 1);
  EXPECT_EQ(one_node.ranks_per_node, 2);
  const Placement spread = place_workers(c, 8, 2);
  EXPECT_EQ(spread.nodes, 4);
  EXPECT_FALSE(spread.oversubscribed);
  EXPECT_TRUE(place_workers(c, 12, 2).oversubscribed);
  const WorkerRate r = worker_rate(c, one_node, "fp32");
  EXPECT_DOUBLE_EQ(r.flops_per_s, 50e9);  // half the cores
  EXPECT_DOUBLE_EQ(r.bytes_per_s, 5e9);   // half the bandwidth
  // One 1-thread worker alone on the node: a quarter of the cores, so a quarter of both rates.
  const WorkerRate lone = worker_rate(c, place_workers(c, 1, 1), "fp32");
  EXPECT_DOUBLE_EQ(lone.flops_per_s, 25e9);
  EXPECT_DOUBLE_EQ(lone.bytes_per_s, 2.5e9);
  // ring on 4 ranks of a star with alpha 1 us, 8 Gbit/s (1 ns per byte), gamma 3 / 10 GB/s.
  const AllreduceModel ring(c, "ring", place_workers(c, 4, 4));
  const double m = 1e6;
  EXPECT_NEAR(ring.seconds(m), 6e-6 + 1.5 * m * 1e-9 + 0.75 * m * 0.3e-9, 1e-12);
  EXPECT_DOUBLE_EQ(AllreduceModel(c, "ring", place_workers(c, 1, 4)).seconds(m), 0.0);
  // The trainer's average: the all-reduce, then the 1/p scaling (8 bytes per float at 3 / gamma).
  EXPECT_NEAR(ring.average_seconds(m), ring.seconds(m) + 2.0 / 3.0 * m * 0.3e-9, 1e-12);
  EXPECT_DOUBLE_EQ(AllreduceModel(c, "ring", place_workers(c, 1, 4)).average_seconds(m), 0.0);
  EXPECT_THROW(AllreduceModel(c, "gossip", one_node), ConfigError);
}

// lenet at batch 32 on 4 workers of the tiny cluster, reduced with ring: the step model's input.
struct LenetOnTiny {
  ClusterSpec c = parse_cluster_file(kTiny, "tiny.yaml");
  std::vector<LayerWork> layers = model_work([] {
    ModelWorkRequest r;
    r.model = "lenet";
    r.batch = 32;
    return r;
  }());
  Placement pl = place_workers(c, 4, 4);
  WorkerRate rate = worker_rate(c, pl, "fp32");
  AllreduceModel ring{c, "ring", pl};
};

// predict's placement facts: what a cluster holds at a layout, the refusal of counts beyond it
// (naming the count, the cluster's size and the counts accepted), and oversubscription.
TEST(AllreduceModel, CapacityAndOversubscription) {
  const ClusterSpec c = parse_cluster_file(kTiny, "tiny.yaml");  // 4 nodes of 4 cores
  EXPECT_EQ(cluster_worker_capacity(c, 1), 16);
  EXPECT_EQ(cluster_worker_capacity(c, 2), 8);
  EXPECT_EQ(cluster_worker_capacity(c, 8), 4);     // more threads than cores: still one per node
  EXPECT_EQ(cluster_worker_capacity(c, 2, 3), 12);  // --workers-per-node 3
  EXPECT_NO_THROW(check_workers_fit(c, {1, 2, 4, 8}, 2, 0, "--workers 1..8"));
  try {
    check_workers_fit(c, {1, 2, 4, 8, 16}, 2, 0, "--workers 1..16");
    FAIL() << "16 workers of 2 threads on 4 nodes of 4 cores were accepted";
  } catch (const ConfigError& e) {
    const std::string m = e.what();
    EXPECT_NE(m.find("--workers 1..16: 16 workers do not fit on cluster tiny"), std::string::npos) << m;
    EXPECT_NE(m.find("4 nodes x 2 worker(s) per node (4 cores / 2 threads per worker) = 8 workers"), std::string::npos) << m;
    EXPECT_NE(m.find("accepted: 1..8 workers"), std::string::npos) << m;
    EXPECT_NE(m.find("--workers 1..8)"), std::string::npos) << m;
    EXPECT_NE(m.find("--set threads=N"), std::string::npos) << m;
  }
  try {
    check_workers_fit(c, {13}, 1, 3, "--workers 13");
    FAIL() << "13 workers at 3 per node on 4 nodes were accepted";
  } catch (const ConfigError& e) {
    const std::string m = e.what();
    EXPECT_NE(m.find("= 12 workers"), std::string::npos) << m;
    EXPECT_NE(m.find("--workers 1..8,12"), std::string::npos) << m;  // the longest doubling range, then the capacity
  }
  try {  // a command without --workers-per-node, whose thread option is spelled otherwise
    check_workers_fit(c, {9}, 2, 0, "--workers 9", {"--threads N", ""});
    FAIL() << "9 workers of 2 threads on 4 nodes of 4 cores were accepted";
  } catch (const ConfigError& e) {
    const std::string m = e.what();
    EXPECT_NE(m.find("fewer threads per worker (--threads N)"), std::string::npos) << m;
    EXPECT_EQ(m.find("--workers-per-node"), std::string::npos) << m;
  }
  // Oversubscribed: more ranks than places (--workers-per-node beyond cores / threads), or one
  // worker with more threads than the node has cores.
  EXPECT_FALSE(place_workers(c, 8, 2).oversubscribed);
  EXPECT_TRUE(place_workers(c, 8, 2, 3).oversubscribed);  // 3 x 2 threads on 4 cores
  EXPECT_TRUE(place_workers(c, 1, 8).oversubscribed);     // 8 threads on 4 cores
  EXPECT_FALSE(place_workers(c, 1, 4).oversubscribed);
}

TEST(StepModel, OverlapHidesCommunicationBehindBackward) {
  const LenetOnTiny t;
  const ClusterSpec& c = t.c;
  const std::vector<LayerWork>& layers = t.layers;
  const WorkerRate& rate = t.rate;
  const AllreduceModel& ring = t.ring;
  StepOptions o;
  o.bucket_mb = 0.25;  // several buckets
  o.overlap = false;
  const StepPrediction after = predict_step(layers, rate, ring, Calibration{}, o);
  o.overlap = true;
  const StepPrediction overlapped = predict_step(layers, rate, ring, Calibration{}, o);
  EXPECT_GT(after.comm, 0.0);
  EXPECT_NEAR(after.exposed_comm, after.comm, 1e-12);
  EXPECT_NEAR(overlapped.comm, after.comm, 1e-15);
  EXPECT_LT(overlapped.exposed_comm, after.exposed_comm);
  EXPECT_LT(overlapped.step, after.step);
  EXPECT_GT(after.bucket_ready.size(), 2u);
  // Every bucket is averaged as the trainer does: all-reduce + scaling, summed over the buckets.
  EXPECT_NEAR(after.comm, after.bucket_done.back() - after.bucket_ready.front(), 1e-12);
  EXPECT_NEAR(after.step, after.compute + after.comm + after.data, 1e-15);
  // Buckets are reduced one after another, never before their gradients exist.
  for (size_t i = 0; i < overlapped.bucket_done.size(); ++i)
    EXPECT_GE(overlapped.bucket_done[i], overlapped.bucket_ready[i]);
  // One worker: nothing to exchange.
  const StepPrediction alone = predict_step(layers, rate, AllreduceModel(c, "ring", place_workers(c, 1, 4)), Calibration{}, o);
  EXPECT_DOUBLE_EQ(alone.comm, 0.0);
}

TEST(StepModel, ContentionRatesOfTheCommunicationThread) {
  StepOptions o;
  o.node_cores = 2;
  o.workers_on_node = 2;
  o.compute_threads = 1;
  ContentionRates r = contention_rates(o);  // 4 busy threads on 2 cores: each at half speed
  EXPECT_DOUBLE_EQ(r.backward, 0.5);
  EXPECT_DOUBLE_EQ(r.comm, 0.5);
  o.workers_on_node = 1;  // 2 threads on 2 cores: none waits
  r = contention_rates(o);
  EXPECT_DOUBLE_EQ(r.backward, 1.0);
  EXPECT_DOUBLE_EQ(r.comm, 1.0);
  o.node_cores = 40;  // 41 threads on 40 cores
  o.compute_threads = 40;
  r = contention_rates(o);
  EXPECT_DOUBLE_EQ(r.backward, 40.0 / 41.0);
  EXPECT_DOUBLE_EQ(r.comm, 40.0 / 41.0);
  o.overlap = false;  // the buckets are reduced after backward: nothing runs beside it
  EXPECT_DOUBLE_EQ(contention_rates(o).backward, 1.0);
  o.overlap = true;
  o.node_cores = 0;  // a GPU node: backward is the GPU's
  EXPECT_DOUBLE_EQ(contention_rates(o).comm, 1.0);
}

// Two workers of one thread on a 2-core node: while a bucket is reduced beside backward, both
// run at half speed, so backward ends later by the overlapped work (the timeline by hand).
TEST(StepModel, TheCommunicationThreadSlowsBackwardOnABusyNode) {
  const LenetOnTiny t;
  const std::vector<LayerWork>& layers = t.layers;
  const WorkerRate& rate = t.rate;
  const AllreduceModel& ring = t.ring;
  StepOptions o;
  o.bucket_mb = 0.25;
  const StepPrediction free = predict_step(layers, rate, ring, Calibration{}, o);
  o.node_cores = 2;
  o.workers_on_node = 2;
  o.compute_threads = 1;
  const StepPrediction busy = predict_step(layers, rate, ring, Calibration{}, o);
  EXPECT_DOUBLE_EQ(free.contention, 0.0);
  EXPECT_NEAR(free.step, free.compute + free.exposed_comm + free.data, 1e-15);
  EXPECT_NEAR(busy.step, busy.compute + busy.contention + busy.exposed_comm + busy.data, 1e-15);
  EXPECT_NEAR(busy.comm, free.comm, 1e-15);  // the same work, done more slowly
  EXPECT_GT(busy.contention, 0.0);
  EXPECT_GT(busy.step, free.step);
  // Replay by hand: a job beside backward does half its work per second and costs backward as
  // much; alone (after backward) it runs at full speed.
  const double B = free.backward;
  double now = 0, progress = 0;
  std::vector<double> done;
  for (size_t i = 0; i < busy.bucket_ready.size(); ++i) {
    const double start = std::max(free.bucket_ready[i], i > 0 ? free.bucket_done[i - 1] : 0.0);
    const double cost = free.bucket_done[i] - start;  // the bucket's work, from the free timeline
    if (progress < busy.bucket_ready[i]) {  // idle thread: backward alone until the bucket is final
      now += busy.bucket_ready[i] - progress;
      progress = busy.bucket_ready[i];
    }
    const double shared_for = std::min(2.0 * cost, (B - progress) / 0.5);  // seconds both run
    now += shared_for;
    progress += 0.5 * shared_for;
    now += cost - 0.5 * shared_for;  // what is left once backward has ended, at full speed
    done.push_back(now);
  }
  ASSERT_EQ(done.size(), busy.bucket_done.size());
  for (size_t i = 0; i < done.size(); ++i) EXPECT_NEAR(busy.bucket_done[i], done[i], 1e-12) << "bucket " << i;
}

TEST(ClusterFile, ShippedFilesParseAndRoundTrip) {
  for (const char* name : {"skylake-8180m", "dgx-h100", "local"}) {
    const std::string path = kSource + "/configs/clusters/" + name + ".yaml";
    SCOPED_TRACE(path);
    const ClusterSpec spec = load_cluster_file(path);
    EXPECT_EQ(spec.name.empty(), false);
    const ClusterSpec again = parse_cluster_file(cluster_yaml(spec), "again.yaml");
    EXPECT_EQ(cluster_yaml(again), cluster_yaml(spec));
  }
  const ClusterSpec skx = load_cluster_file(kSource + "/configs/clusters/skylake-8180m.yaml");
  EXPECT_EQ(skx.nodes, 1000);
  EXPECT_DOUBLE_EQ(skx.peak_gflops("fp32"), 8960);
  EXPECT_EQ(skx.node.gemm_blocking.mc, 480);
  EXPECT_DOUBLE_EQ(skx.interconnect.network().alpha_us, 0.5);
  const ClusterSpec dgx = load_cluster_file(kSource + "/configs/clusters/dgx-h100.yaml");
  EXPECT_EQ(dgx.interconnect.levels.size(), 2u);
  EXPECT_EQ(dgx.ranks_per_node(1), 8);
  EXPECT_THROW(skx.peak_gflops("bf16"), ConfigError);
}

TEST(ClusterFile, OverridesApplyBeforeTheChecks) {
  const ClusterSpec mesh = parse_cluster_file(kTiny, "tiny.yaml", {"interconnect.topology=mesh", "interconnect.dims=[2, 2]"});
  EXPECT_EQ(mesh.interconnect.network().topology, Topology::mesh);
  EXPECT_EQ(mesh.interconnect.network().dims, (std::vector<int64_t>{2, 2}));
  EXPECT_THROW(parse_cluster_file(kTiny, "tiny.yaml", {"interconnect.topology=mesh"}), ConfigError);  // no dims
  EXPECT_THROW(parse_cluster_file(kTiny, "tiny.yaml", {"no_equals_sign"}), ConfigError);
}

TEST(ClusterFile, ErrorsNameFileLineAndKey) {
  std::string e = error_of(std::string(kTiny) + "nodez: 3\n");
  EXPECT_NE(e.find("bad.yaml:5"), std::string::npos) << e;
  EXPECT_NE(e.find("did you mean 'nodes'"), std::string::npos) << e;
  e = error_of("name: x\nnodes: 2\nnode: {cores: 4, peak_gflops: {fp32: 1}, memory_bandwidth_gbs: 1}\n"
               "interconnect: {topology: ring, alpha_us: 1, bandwidth_gbps: 1}\n");
  EXPECT_NE(e.find("interconnect.topology"), std::string::npos) << e;
  EXPECT_NE(e.find("star | mesh | torus | fat_tree"), std::string::npos) << e;
  e = error_of("name: x\nnodes: 2\nnode: {cores: 4, peak_gflops: {fp32: -1}, memory_bandwidth_gbs: 1}\n"
               "interconnect: {alpha_us: 1, bandwidth_gbps: 1}\n");
  EXPECT_NE(e.find("node.peak_gflops.fp32"), std::string::npos) << e;
  e = error_of("name: x\nnodes: 2\nnode: {cores: 4, peak_gflops: {fp32: 1}, memory_bandwidth_gbs: 1}\n"
               "interconnect: {alpha_us: 1, bandwidth_gbps: 1, levels: [{alpha_us: 1, bandwidth_gbps: 1}]}\n");
  EXPECT_NE(e.find("give it on each level"), std::string::npos) << e;
  e = error_of("name: x\nnodes: 2000\nnode: {cores: 4, peak_gflops: {fp32: 1}, memory_bandwidth_gbs: 1}\n"
               "interconnect: {topology: mesh, dims: [32, 32], alpha_us: 1, bandwidth_gbps: 1}\n");
  EXPECT_NE(e.find("fewer than nodes"), std::string::npos) << e;
  e = error_of("name: x\nnodes: [\n");
  EXPECT_NE(e.find("not valid YAML"), std::string::npos) << e;
}

TEST(Calibration, EfficienciesOfTheWorkersThreadCount) {
  const std::string text = std::string(kTiny) +
                           "calibration:\n  threads: 2\n  kinds: {conv: {fp: 1, bp: 1}}\n"
                           "  layers: {lenet: {conv2: {fp: 0.25, bp: 0.5}}}\n"
                           "  at_threads: {1: {kinds: {conv: {fp: 0.5, bp: 0.5}}}}\n";
  const ClusterSpec c = parse_cluster_file(text, "cal.yaml");
  ASSERT_EQ(c.calibration.at_threads.count(1), 1u);
  EXPECT_EQ(parse_cluster_file(cluster_yaml(c), "again.yaml").calibration.at_threads.at(1).kinds.at("conv").fp, 0.5);
  ModelWorkRequest r;
  r.model = "lenet";
  r.batch = 8;
  const std::vector<LayerWork> layers = model_work(r);
  const WorkerRate rate{1e9, 1e9};
  const std::vector<LayerTime> two = layer_times(layers, rate, c.calibration, "lenet", false, 2);
  const std::vector<LayerTime> one = layer_times(layers, rate, c.calibration, "lenet", false, 1);
  const std::vector<LayerTime> plain = layer_times(layers, rate, Calibration{}, "lenet", false);
  // conv1: the kind's median (1 at two threads, 0.5 at one); conv2: its own entry at two threads.
  EXPECT_DOUBLE_EQ(two[0].seconds[0], plain[0].seconds[0]);
  EXPECT_DOUBLE_EQ(one[0].seconds[0], 2 * plain[0].seconds[0]);
  EXPECT_DOUBLE_EQ(two[3].seconds[0], 4 * plain[3].seconds[0]);
  EXPECT_DOUBLE_EQ(two[3].seconds[1], 2 * plain[3].seconds[1]);
  EXPECT_DOUBLE_EQ(one[3].seconds[0], 2 * plain[3].seconds[0]);  // at one thread: conv's kind
}

// The slowest of n workers whose compute varies by a normal noise: E[max of n standard normals]
// against its known values (0.5642 = 1/sqrt(pi) for 2; 1.0294 for 4; 1.4236 for 8; 3.2414 for
// 1000), then priced into the step only when there is more than one worker and a measured cv.
TEST(StepModel, TheStepWaitsForTheSlowestOfNoisyWorkers) {
  EXPECT_DOUBLE_EQ(expected_max_standard_normal(1), 0.0);
  EXPECT_NEAR(expected_max_standard_normal(2), 1.0 / std::sqrt(M_PI), 1e-6);
  EXPECT_NEAR(expected_max_standard_normal(4), 1.029375, 1e-5);
  EXPECT_NEAR(expected_max_standard_normal(8), 1.423600, 1e-5);
  EXPECT_NEAR(expected_max_standard_normal(1000), 3.241436, 1e-4);
  const LenetOnTiny t;
  StepOptions o;
  const StepPrediction quiet = predict_step(t.layers, t.rate, t.ring, Calibration{}, o);
  EXPECT_DOUBLE_EQ(quiet.straggle, 0.0);
  o.compute_noise_cv = 0.1;
  EXPECT_DOUBLE_EQ(predict_step(t.layers, t.rate, t.ring, Calibration{}, o).straggle, 0.0);  // one worker
  o.workers = 4;
  const StepPrediction noisy = predict_step(t.layers, t.rate, t.ring, Calibration{}, o);
  EXPECT_NEAR(noisy.straggle, quiet.compute * 0.1 * 1.029375, 1e-6 * quiet.compute);
  EXPECT_NEAR(noisy.step, quiet.step + noisy.straggle, 1e-15);
  o.weight_average = true;  // 4 steps between waits: the noise of their sum grows by sqrt(4) only
  o.period = 4;
  EXPECT_NEAR(predict_step(t.layers, t.rate, t.ring, Calibration{}, o).straggle, noisy.straggle / 2, 1e-15);
  // The cluster file keeps the calibrated cv.
  const ClusterSpec c = parse_cluster_file(std::string(kTiny) + "calibration:\n  threads: 1\n  compute_noise_cv: 0.08\n", "cv.yaml");
  EXPECT_DOUBLE_EQ(c.calibration.compute_noise_cv, 0.08);
  EXPECT_DOUBLE_EQ(parse_cluster_file(cluster_yaml(c), "again.yaml").calibration.compute_noise_cv, 0.08);
}

TEST(AllreduceModel, HierarchicalOnTheDgxCluster) {
  const ClusterSpec dgx = load_cluster_file(kSource + "/configs/clusters/dgx-h100.yaml");
  const double m = 100e6, gamma = 3.0 / 3350e9;
  const LinkLevel& nvlink = dgx.interconnect.levels[0];
  const LinkLevel& ib = dgx.interconnect.levels[1];
  // 8 GPUs of one node: the ring on NVLink alone.
  const Placement one = place_workers(dgx, 8, 1);
  EXPECT_EQ(one.nodes, 1);
  EXPECT_NEAR(AllreduceModel(dgx, "ring", one).seconds(m),
              ring_allreduce(8, m).seconds(nvlink.alpha_s(), nvlink.beta_s_per_byte(), gamma), 1e-12);
  // 2 nodes: reduce-scatter + all-gather inside each node on NVLink, the ring between the
  // nodes on InfiniBand on each GPU's 1/8 share.
  const Placement two = place_workers(dgx, 16, 1);
  EXPECT_EQ(two.nodes, 2);
  EXPECT_EQ(two.ranks_per_node, 8);
  const double expected = bkt_allreduce({8}, m).seconds(nvlink.alpha_s(), nvlink.beta_s_per_byte(), gamma) +
                          ring_allreduce(2, m / 8).seconds(ib.alpha_s(), ib.beta_s_per_byte(), gamma);
  EXPECT_NEAR(AllreduceModel(dgx, "ring", two).seconds(m), expected, 1e-12);
  // tree runs flat over all 16 ranks at the network's alpha and beta.
  EXPECT_NEAR(AllreduceModel(dgx, "tree", two).seconds(m),
              tree_allreduce(16, m).seconds(ib.alpha_s(), ib.beta_s_per_byte(), gamma), 1e-12);
  // A GPU worker gets its GPU's rates.
  EXPECT_DOUBLE_EQ(worker_rate(dgx, two, "bf16").flops_per_s, 989400e9);
}
