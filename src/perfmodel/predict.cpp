// See predict.h.
#include "perfmodel/predict.h"

#include <algorithm>
#include <map>
#include <memory>

#include "config/enums.h"
#include "dist/exchange_strategy.h"
#include "core/error.h"
#include "nn/models.h"
#include "perfmodel/shares_model.h"

namespace ts::perf {
namespace {

int64_t batch_at(const RunConfig& c, int64_t workers) {
  if (c.batch_per_worker > 0) return c.batch_per_worker;
  if (c.global_batch % workers != 0)
    throw ConfigError("global_batch " + std::to_string(c.global_batch) + " does not divide by " + std::to_string(workers) +
                      " workers; give worker counts that divide it, or batch_per_worker");
  return c.global_batch / workers;
}

ModelWorkRequest work_request(const RunConfig& c, const ClusterSpec& cluster, int64_t batch) {
  ModelWorkRequest r;
  r.model = c.model;
  r.batch = batch;
  r.delta = c.precision == Precision::bf16 || c.precision == Precision::fp16 ? 2 : 4;  // fp32, tf32: 4 bytes
  r.blocking = cluster.node.gemm_blocking;
  r.dropout = c.dropout;
  return r;
}

StepOptions step_options(const RunConfig& c, int64_t batch) {
  StepOptions o;
  o.overlap = c.dist.overlap;
  o.bucket_mb = c.dist.bucket_mb;
  o.weight_average = c.dist.strategy == DistStrategy::weight_avg;
  o.period = c.dist.period;
  o.model = c.model;
  o.data_bytes = 4.0 * static_cast<double>(model_expected_input(c.model).sample.numel()) * static_cast<double>(batch);
  return o;
}

// Unequal shares or a slowed rank (dist.partition, dist.emulate_slowdown): priced per rank.
bool uneven(const RunConfig& c) {
  return c.dist.partition != PartitionKind::equal || c.dist.emulate_slowdown_rank >= 0;
}

// The minibatch of the layer table at `workers`: the batch per worker, the even split of the
// global batch, or for uneven ranks the largest equal share (their own shares need no division).
int64_t nominal_batch(const RunConfig& c, int64_t workers) {
  if (uneven(c) && c.batch_per_worker == 0) return (c.global_batch + workers - 1) / workers;
  return batch_at(c, workers);
}

WorkerPoint point_for(const RunConfig& c, const ClusterSpec& cluster, int64_t workers, const std::vector<LayerWork>& layers,
                      const PredictOptions& options) {
  WorkerPoint pt;
  pt.workers = workers;
  pt.batch_per_worker = nominal_batch(c, workers);
  pt.placement = place_workers(cluster, workers, c.threads, options.workers_per_node);
  pt.rate = worker_rate(cluster, pt.placement, precision_name(c.precision));
  const AllreduceModel allreduce(cluster, allreduce_algorithm_name(c.dist.allreduce), pt.placement);
  pt.allreduce = allreduce.describe();
  // Compressed buckets: the 16-bit, qsgd and topk collectives are the MPI library's own.
  const AllreduceModel library(cluster, "mpi", pt.placement);
  std::unique_ptr<CompressionModel> compression;
  if (c.dist.compression.enabled()) {
    CompressionOptions co = c.dist.compression;
    if (co.kind == CompressionKind::powersgd) co.matrices = weight_matrices_of_work(layers);
    compression = std::make_unique<CompressionModel>(co, cluster, allreduce, library, pt.rate, workers);
    pt.compression = compression->describe();
  }
  // One rank's step at minibatch `batch` (the layers at that batch), before any slowdown.
  std::map<int64_t, StepPrediction> steps;
  auto step_at = [&](int64_t batch) -> const StepPrediction& {
    auto it = steps.find(batch);
    if (it != steps.end()) return it->second;
    StepOptions o = step_options(c, batch);
    o.gemm_only = options.gemm_only;
    o.worker_cores = cluster.node.gpus > 0 ? 0.0 : pt.placement.cores_per_worker;
    o.node_cores = cluster.node.gpus > 0 ? 0.0 : static_cast<double>(cluster.node.cores);
    o.workers_on_node = pt.placement.ranks_per_node;
    o.compute_threads = static_cast<double>(std::max<int64_t>(1, c.threads));
    o.workers = workers;
    o.compute_noise_cv = cluster.calibration.compute_noise_cv;
    o.compression = compression.get();
    const std::vector<LayerWork> at = batch == pt.batch_per_worker ? layers : model_work(work_request(c, cluster, batch));
    return steps.emplace(batch, predict_step(at, pt.rate, allreduce, cluster.calibration, o)).first->second;
  };
  if (!uneven(c)) {
    pt.step = step_at(pt.batch_per_worker);
    pt.throughput = pt.step.step > 0 ? static_cast<double>(workers * pt.batch_per_worker) / pt.step.step : 0.0;
    return pt;
  }
  // Uneven ranks: every rank waits for the slowest at the exchange, so the step is its step,
  // with the emulated slowdown's sleep ((factor - 1) x forward + backward) after its backward.
  const RankLoads loads = rank_loads(c, workers, [&](int64_t b) {
    const StepPrediction& s = step_at(b);
    return s.forward + s.backward;
  });
  for (size_t r = 0; r < loads.shares.size(); ++r) {
    StepPrediction s = step_at(loads.shares[r]);
    const double slept = (loads.slowdown[r] - 1.0) * (s.forward + s.backward);
    s.compute += slept;
    s.step += slept;
    if (r == 0 || s.step > pt.step.step) {
      pt.step = s;
      pt.batch_per_worker = loads.shares[r];
    }
  }
  pt.shares = loads.shares;
  pt.throughput = pt.step.step > 0 ? static_cast<double>(c.global_batch_for(workers)) / pt.step.step : 0.0;
  return pt;
}

// The reference of scaling efficiency: one plain worker (no shares to split, no slowdown).
RunConfig single_plain_worker(const RunConfig& c) {
  RunConfig plain = c;
  plain.dist.partition = PartitionKind::equal;
  plain.dist.emulate_slowdown_rank = -1;
  plain.dist.shares.clear();
  return plain;
}

}  // namespace

void check_modelled(const ResolvedConfig& cfg) {
  const DistConfig& d = cfg.run.dist;
  const std::string measure = "; measure it with trainscale run";
  if (d.strategy == DistStrategy::async_ps || d.strategy == DistStrategy::hogwild)
    throw ConfigError(cfg.locate("dist.strategy") + ": the performance model prices sync and weight_avg, not " +
                      dist_strategy_name(d.strategy) + measure);
  if (d.ranks_differ) {
    const char* key = !cfg.run.rank_backends.empty() ? "ranks.backend" : "ranks.threads";
    throw ConfigError(cfg.locate(key) + ": the performance model prices ranks of one kind (a cluster file describes "
                      "one node), not ranks of different backends or threads; predict the run without " +
                      std::string(key) + " (unequal shares and dist.emulate_slowdown are priced)" + measure);
  }
}

int64_t cluster_worker_capacity(const ClusterSpec& cluster, int64_t threads, int64_t workers_per_node) {
  return cluster.nodes * (workers_per_node > 0 ? workers_per_node : cluster.ranks_per_node(threads));
}

void check_workers_fit(const ClusterSpec& cluster, const std::vector<int64_t>& workers, int64_t threads,
                       int64_t workers_per_node, const std::string& asked, const WorkerFitHints& hints) {
  const int64_t capacity = cluster_worker_capacity(cluster, threads, workers_per_node);
  const auto too_many = std::find_if(workers.begin(), workers.end(), [&](int64_t w) { return w > capacity; });
  if (too_many == workers.end()) return;
  const std::string n = std::to_string(capacity);
  const int64_t per_node = capacity / cluster.nodes;
  std::string why;
  if (workers_per_node > 0) why = "--workers-per-node";
  else if (cluster.node.gpus > 0) why = "one per GPU";
  else
    why = std::to_string(cluster.node.cores) + " cores / " + std::to_string(std::max<int64_t>(1, threads)) +
          " threads per worker";
  int64_t doubling = 1;  // 1..doubling is the longest range of powers of two that fits
  while (doubling * 2 <= capacity) doubling *= 2;
  const std::string example = "1.." + std::to_string(doubling) + (doubling == capacity ? "" : "," + n);
  std::string fix = "give worker counts up to " + n + " (e.g. --workers " + example +
                    "), or a larger cluster (--cluster-set nodes=N)";
  if (workers_per_node == 0 && cluster.node.gpus == 0) fix += ", or fewer threads per worker (" + hints.threads + ")";
  if (!hints.workers_per_node.empty())
    fix += ", or, to model oversubscribed nodes, more workers per node (" + hints.workers_per_node + ")";
  throw ConfigError(asked + ": " + std::to_string(*too_many) + " workers do not fit on cluster " + cluster.name +
                    (cluster.path.empty() ? "" : " (" + cluster.path + ")") + ", which holds " +
                    std::to_string(cluster.nodes) + " nodes x " + std::to_string(per_node) + " worker(s) per node (" +
                    why + ") = " + n + " workers; accepted: 1.." + n + " workers; " + fix);
}

Prediction predict(const RunConfig& config, const ClusterSpec& cluster, const std::vector<int64_t>& workers,
                   const PredictOptions& options) {
  if (workers.empty()) throw ConfigError("predict needs at least one worker count (--workers 1,2,4)");
  Prediction out;
  out.model = config.model;
  out.precision = precision_name(config.precision);
  // With a fixed batch per worker the layers are the same at every count: build them once.
  std::vector<LayerWork> fixed;
  if (config.batch_per_worker > 0) fixed = model_work(work_request(config, cluster, config.batch_per_worker));
  auto layers_for = [&](int64_t w) {
    return config.batch_per_worker > 0 ? fixed : model_work(work_request(config, cluster, nominal_batch(config, w)));
  };
  for (int64_t w : workers) {
    if (w < 1) throw ConfigError("--workers: worker counts must be >= 1 (got " + std::to_string(w) + ")");
    const std::vector<LayerWork> layers = layers_for(w);
    out.points.push_back(point_for(config, cluster, w, layers, options));
    if (out.layers.empty()) out.layers = layers;
  }
  // Scaling efficiency against one plain worker (predicted even when 1 is not in the list).
  const RunConfig plain = single_plain_worker(config);
  const double single = workers.front() == 1 && !uneven(config)
                            ? out.points.front().throughput
                            : point_for(plain, cluster, 1, model_work(work_request(plain, cluster, nominal_batch(plain, 1))),
                                        options)
                                  .throughput;
  for (WorkerPoint& pt : out.points)
    pt.scaling_efficiency = single > 0 ? pt.throughput / (static_cast<double>(pt.workers) * single) : 0.0;
  return out;
}

}  // namespace ts::perf
