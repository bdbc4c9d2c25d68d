// The run-config keys of data-parallel training (dist.*, global_batch / batch_per_worker,
// lr_schedule.scale / base_batch): parsed, resolved and checked as docs/config.md says.
#include <gtest/gtest.h>

#include <string>

#include "core/error.h"
#include "config/run_config.h"

using namespace ts;

namespace {

std::string error_of(const std::string& yaml) {
  try {
    parse_run_config(yaml, "dist.yaml", {});
  } catch (const ConfigError& e) {
    return e.what();
  }
  return "";
}

}  // namespace

TEST(DistConfig, AlgorithmsOfAllreduceHAndNcclAreAccepted) {
  for (AllreduceAlgorithm a : known_allreduce_algorithms()) {
    const std::string name = allreduce_algorithm_name(a);
    auto c = parse_run_config("dist: {allreduce: " + name + "}\n", "dist.yaml", {});
    EXPECT_EQ(c.run.dist.allreduce, a) << name;
  }
  std::string e = error_of("dist: {allreduce: hypercube}\n");
  EXPECT_NE(e.find("dist.yaml:1"), std::string::npos) << e;
  EXPECT_NE(e.find("mpi | ring | tree | ps | shm | butterfly | nccl"), std::string::npos) << e;
}

TEST(DistConfig, StrategyPeriodBucketAndOverlap) {
  auto c = parse_run_config("dist: {strategy: weight_avg, period: 4, bucket_mb: 0.5, overlap: false}\n", "dist.yaml", {});
  EXPECT_EQ(c.run.dist.strategy, DistStrategy::weight_avg);
  EXPECT_EQ(c.run.dist.period, 4);
  EXPECT_EQ(c.run.dist.bucket_mb, 0.5);
  EXPECT_FALSE(c.run.dist.overlap);
  EXPECT_EQ(c.flat.at("dist.period"), "4");
  // Defaults: sync, ring, 25 MiB buckets, overlap on, period 1.
  auto d = parse_run_config("", "dist.yaml", {});
  EXPECT_EQ(d.run.dist.strategy, DistStrategy::sync);
  EXPECT_EQ(d.run.dist.allreduce, AllreduceAlgorithm::ring);
  EXPECT_EQ(d.run.dist.bucket_mb, 25.0);
  EXPECT_TRUE(d.run.dist.overlap);
  EXPECT_EQ(d.run.dist.period, 1);
  EXPECT_EQ(d.run.dist.shm_chunk_kb, 32);  // the measured shm window, recorded like every key
  EXPECT_EQ(d.run.dist.shm_buffers, 64);
  EXPECT_EQ(d.flat.at("dist.shm_chunk_kb"), "32");
  // A period only means something for weight_avg.
  std::string e = error_of("dist: {strategy: sync, period: 3}\n");
  EXPECT_NE(e.find("key 'dist.period'"), std::string::npos) << e;
  EXPECT_NE(e.find("weight_avg only"), std::string::npos) << e;
  EXPECT_EQ(error_of("dist: {strategy: sync, period: 1}\n"), "");
  EXPECT_NE(error_of("dist: {strategy: weight_avg, period: 0}\n").find("must be > 0"), std::string::npos);
  EXPECT_NE(error_of("dist: {bucket_mb: 0}\n").find("must be > 0"), std::string::npos);
  EXPECT_NE(error_of("dist: {strategy: allreduce}\n").find("sync | weight_avg"), std::string::npos);
  EXPECT_NE(error_of("dist: {shm_chunk_kb: 0}\n").find("must be > 0"), std::string::npos);
  EXPECT_NE(error_of("dist: {shm_buffers: 2000}\n").find("at most 1024"), std::string::npos);
  auto shm = parse_run_config("dist: {allreduce: shm, shm_chunk_kb: 64, shm_buffers: 16}\n", "dist.yaml", {});
  EXPECT_EQ(shm.run.dist.shm_chunk_kb, 64);
  EXPECT_EQ(shm.run.dist.shm_buffers, 16);
}

TEST(DistConfig, AsyncPsServersAndStaleness) {
  auto c = parse_run_config("workers: 2\ndist: {strategy: async_ps, servers: 2, staleness: 3}\n", "dist.yaml", {});
  EXPECT_EQ(c.run.dist.strategy, DistStrategy::async_ps);
  EXPECT_EQ(c.run.dist.servers, 2);
  EXPECT_EQ(c.run.dist.staleness, 3);
  EXPECT_EQ(c.flat.at("dist.staleness"), "3");
  // Unset: one server, bulk synchronous, and out of the resolved config (config ids unchanged).
  auto d = parse_run_config("dist: {strategy: async_ps}\n", "dist.yaml", {});
  EXPECT_EQ(d.run.dist.servers, 1);
  EXPECT_EQ(d.run.dist.staleness, 0);
  EXPECT_EQ(d.flat.count("dist.servers"), 0u);
  std::string e = error_of("dist: {strategy: sync, staleness: 2}\n");
  EXPECT_NE(e.find("dist.staleness"), std::string::npos) << e;
  EXPECT_NE(e.find("async_ps only"), std::string::npos) << e;
  EXPECT_NE(error_of("dist: {strategy: async_ps, servers: 0}\n").find("must be > 0"), std::string::npos);
  EXPECT_NE(error_of("dist: {strategy: async_ps, staleness: 1001}\n").find("at most 1000"), std::string::npos);
  e = error_of("dist: {strategy: async_ps}\nloss_scale: {mode: static}\n");
  EXPECT_NE(e.find("without unscaling"), std::string::npos) << e;
  // A slowed worker exercises the staleness bound; shares of the batch mean nothing to it.
  auto slow = parse_run_config("workers: 2\ndist: {strategy: async_ps, staleness: 1, emulate_slowdown: {rank: 1, factor: 4}}\n",
                               "dist.yaml", {});
  EXPECT_EQ(slow.run.dist.emulate_slowdown_rank, 1);
  e = error_of("workers: 2\nglobal_batch: 128\ndist: {strategy: async_ps, partition: static, shares: [96, 32]}\n");
  EXPECT_NE(e.find("key 'dist.partition'"), std::string::npos) << e;
  EXPECT_NE(e.find("own pace"), std::string::npos) << e;
}

TEST(DistConfig, HogwildThreadsPerWorker) {
  auto c = parse_run_config("dist: {strategy: hogwild, threads_per_worker: 4}\n", "dist.yaml", {});
  EXPECT_EQ(c.run.dist.strategy, DistStrategy::hogwild);
  EXPECT_EQ(c.run.dist.threads_per_worker, 4);
  EXPECT_EQ(c.flat.at("dist.threads_per_worker"), "4");
  EXPECT_EQ(parse_run_config("dist: {strategy: hogwild}\n", "dist.yaml", {}).run.dist.threads_per_worker, 1);
  std::string e = error_of("dist: {strategy: sync, threads_per_worker: 2}\n");
  EXPECT_NE(e.find("hogwild only"), std::string::npos) << e;
  e = error_of("workers: 2\ndist: {strategy: hogwild, threads_per_worker: 2}\n");
  EXPECT_NE(e.find("multi-rank hogwild is not implemented"), std::string::npos) << e;
  EXPECT_NE(error_of("dist: {strategy: hogwild, threads_per_worker: 0}\n").find("must be > 0"), std::string::npos);
  e = error_of("dist: {strategy: hogwild, threads_per_worker: 2, emulate_slowdown: {rank: 0}}\n");
  EXPECT_NE(e.find("threads of one process"), std::string::npos) << e;
}

TEST(DistConfig, GlobalBatchSplitsOverWorkers) {
  auto g = parse_run_config("global_batch: 128\nworkers: 4\n", "dist.yaml", {});
  EXPECT_EQ(g.run.batch_for(4), 32);
  EXPECT_EQ(g.run.batch_per_worker, 0);
  EXPECT_EQ(g.flat.count("batch_per_worker"), 0u);
  auto b = parse_run_config("batch_per_worker: 16\nworkers: 4\n", "dist.yaml", {});
  EXPECT_EQ(b.run.batch_for(4), 16);
  EXPECT_NE(error_of("global_batch: 100\nworkers: 3\n").find("does not divide evenly over 3 workers"),
            std::string::npos);
  EXPECT_NE(error_of("global_batch: 64\nbatch_per_worker: 16\n").find("exactly one of batch_per_worker, global_batch"),
            std::string::npos);
}

TEST(DistConfig, LinearScalingKeys) {
  auto c = parse_run_config("lr_schedule: {scale: linear, base_batch: 256, warmup_epochs: 5}\n", "dist.yaml", {});
  EXPECT_EQ(c.run.lr_schedule.scale, LrScale::linear);
  EXPECT_EQ(c.run.lr_schedule.base_batch, 256);
  EXPECT_EQ(c.run.lr_schedule.warmup_epochs, 5.0);
  EXPECT_NE(error_of("lr_schedule: {scale: sqrt}\n").find("none | linear"), std::string::npos);
  EXPECT_NE(error_of("lr_schedule: {base_batch: -1}\n").find("must be >= 0"), std::string::npos);
}

// Heterogeneous workers (docs/heterogeneous.md): dist.partition and its keys, unset by default
// (out of the resolved config and the config_id), shares as a YAML list or `--set a,b`.
TEST(DistConfig, PartitionSharesAndEmulatedSlowdown) {
  auto d = parse_run_config("", "dist.yaml", {});
  EXPECT_EQ(d.run.dist.partition, PartitionKind::equal);
  EXPECT_FALSE(d.run.dist.heterogeneous());
  EXPECT_EQ(d.run.dist.emulate_slowdown_rank, -1);
  EXPECT_EQ(d.flat.count("dist.partition"), 0u) << "unset keys stay out of the config_id";
  EXPECT_EQ(d.yaml.find("partition"), std::string::npos);

  const std::string two = "workers: 2\nglobal_batch: 128\n";
  auto s = parse_run_config(two + "dist: {partition: static, shares: [96, 32]}\n", "dist.yaml", {});
  EXPECT_EQ(s.run.dist.partition, PartitionKind::static_);
  EXPECT_EQ(s.run.dist.shares, (std::vector<int64_t>{96, 32}));
  EXPECT_EQ(s.flat.at("dist.shares"), "96,32");
  auto again = parse_run_config(s.yaml, "resolved.yaml", {});  // the canonical YAML reads back the same
  EXPECT_EQ(again.run.dist.shares, s.run.dist.shares);
  auto o = parse_run_config(two, "dist.yaml", {"dist.partition=static", "dist.shares=100,28"});
  EXPECT_EQ(o.run.dist.shares, (std::vector<int64_t>{100, 28}));
  // 129 over 2 unequal shares: the equal split's divisibility does not apply.
  EXPECT_EQ(error_of("workers: 2\nglobal_batch: 129\ndist: {partition: static, shares: [100, 29]}\n"), "");

  auto m = parse_run_config(two + "dist: {partition: adaptive, calibration_steps: 3, rebalance_steps: 7, share_quantum: 8, "
                                  "emulate_slowdown: {rank: 1, factor: 2.5}}\n", "dist.yaml", {});
  EXPECT_EQ(m.run.dist.partition, PartitionKind::adaptive);
  EXPECT_EQ(m.run.dist.calibration_steps, 3);
  EXPECT_EQ(m.run.dist.rebalance_steps, 7);
  EXPECT_EQ(m.run.dist.share_quantum, 8);
  EXPECT_EQ(m.run.dist.emulate_slowdown_rank, 1);
  EXPECT_EQ(m.run.dist.emulate_slowdown_factor, 2.5);
  EXPECT_EQ(m.flat.at("dist.emulate_slowdown.factor"), "2.5");

  std::string e = error_of(two + "dist: {partition: static, shares: [[96], 32]}\n");
  EXPECT_NE(e.find("must be a list of numbers"), std::string::npos) << e;
  e = error_of(two + "dist: {partition: measured, rebalance_steps: 4}\n");
  EXPECT_NE(e.find("key 'dist.rebalance_steps': applies to dist.partition adaptive only"), std::string::npos) << e;
  // A CUDA rank follows shares that change (its staged input re-plans; docs/heterogeneous.md).
  EXPECT_EQ(error_of(two + "dist: {partition: adaptive}\nbackend: cuda\n"), "");
  e = error_of(two + "dist: {partition: even}\n");
  EXPECT_NE(e.find("equal | static | measured | adaptive"), std::string::npos) << e;
  e = error_of(two + "dist: {emulate_slowdown: {rank: 0, factor: 0.5}}\n");
  EXPECT_NE(e.find("dist.emulate_slowdown.factor"), std::string::npos) << e;
}
