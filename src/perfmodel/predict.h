// `trainscale predict`'s computation: a resolved run config on a cluster, for a list of worker
// counts: the step split into compute / communication / exposed communication / data, the
// throughput, the scaling efficiency and each layer's bound (docs/model.md).
#pragma once

#include <cstdint>
#include <string>
#include <vector>

#include "config/run_config.h"
#include "perfmodel/allreduce_model.h"
#include "perfmodel/cluster.h"
#include "perfmodel/layer_costs.h"
#include "perfmodel/step_model.h"

namespace ts::perf {

struct PredictOptions {
  bool gemm_only = false;  // only conv and fc layers cost time (the material's node model)
  int64_t workers_per_node = 0;  // > 0: the run's layout; 0: each node's places filled first
};

struct WorkerPoint {
  int64_t workers = 1;
  int64_t batch_per_worker = 1;
  Placement placement;
  WorkerRate rate;
  std::string allreduce;        // AllreduceModel::describe()
  std::string compression;      // CompressionModel::describe(), "" without compression
  // Uneven ranks (dist.partition, dist.emulate_slowdown): each rank's samples per step; the
  // point's step and batch_per_worker are then the slowest rank's. Empty for equal workers.
  std::vector<int64_t> shares;
  StepPrediction step;
  double throughput = 0;        // samples per second over all workers
  double scaling_efficiency = 0;  // throughput / (workers x throughput at 1 worker)
};

struct Prediction {
  std::string model, precision;
  std::vector<LayerWork> layers;  // at the first point's batch per worker
  std::vector<WorkerPoint> points;
};

// ConfigError (exit 2, naming the key and where it is set) for what the model does not price:
// async_ps and hogwild, and ranks of different backends or threads. The model prices sync and
// weight_avg, sync's buckets compressed or not, on ranks of one kind with equal or unequal
// shares and an emulated slow rank (docs/model.md); a prediction that silently left the rest out
// would be wrong. (A compressor without codec rates in the cluster file is refused by predict
// itself: perfmodel/compression_model.h.)
void check_modelled(const ResolvedConfig& config);

// The most workers `cluster` holds at a layout: its nodes x `workers_per_node` when > 0, else
// x a node's places (one per GPU, or cores / threads).
int64_t cluster_worker_capacity(const ClusterSpec& cluster, int64_t threads, int64_t workers_per_node = 0);

// ConfigError (exit 2) for the first count of `workers` above cluster_worker_capacity: what
// `asked` for it (e.g. "--workers 1..1024"), what the cluster holds and why, the counts accepted
// and what to change, spelled as the asking command's options (`hints`; an empty option is not
// offered). predict and trainscale-sim refuse such counts instead of squeezing them onto the nodes.
struct WorkerFitHints {
  std::string threads = "--set threads=N";
  std::string workers_per_node = "--workers-per-node K";
};
void check_workers_fit(const ClusterSpec& cluster, const std::vector<int64_t>& workers, int64_t threads,
                       int64_t workers_per_node, const std::string& asked, const WorkerFitHints& hints = {});

// The steps of `config` on `cluster` at each worker count (its `workers` key is replaced; a
// global_batch is split over each count and must divide by it).
Prediction predict(const RunConfig& config, const ClusterSpec& cluster, const std::vector<int64_t>& workers,
                   const PredictOptions& options = {});

}  // namespace ts::perf
