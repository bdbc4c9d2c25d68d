// The modelled per-step work of a simulated worker (see workload.h).
#include "sim/workload.h"

#include <algorithm>
#include <memory>
#include <string>

#include "backend/backend_factory.h"
#include "core/error.h"
#include "nn/models.h"

namespace ts::sim {
namespace {

// From the model's graph (no arenas allocated): its layer table, forward FLOPs per sample, and
// the non-trainable state (batch-norm running statistics) that weight averaging and
// average_state exchange besides the weights.
void read_graph(const RunConfig& r, Workload& w) {
  std::unique_ptr<Backend> backend = make_backend("ref");
  std::unique_ptr<Net> net = build_model_graph(r.model, *backend, model_expected_input(r.model), r.dropout);
  for (int node = 1; node < net->node_count(); ++node) w.state_count += net->layer(node)->state_count();
  w.table = net->layer_table();
  w.flops_per_sample = net->flops_per_sample();
}

// What the simulated ranks cannot do, refused before the model prices anything.
void refuse_unsimulated(const DistConfig& dist) {
  // The simulated ranks move no real gradients, so no codec would run on them.
  if (dist.compression.enabled())
    throw ConfigError(std::string("dist.compression: trainscale-sim does not simulate ") +
                      compression_kind_name(dist.compression.kind) +
                      " (its ranks carry no real gradients to encode); predict it with trainscale predict, simulate the "
                      "run with dist.compression: none, or measure it with trainscale run");
  // The simulated ranks all compute the model's one worker step.
  if (dist.partition != PartitionKind::equal || dist.emulate_slowdown_rank >= 0)
    throw ConfigError(std::string(dist.partition != PartitionKind::equal ? "dist.partition" : "dist.emulate_slowdown") +
                      ": trainscale-sim simulates equal workers; predict uneven shares or a slowed rank with trainscale "
                      "predict, or measure them with trainscale run");
  // async_ps needs server ranks beyond the workers and hogwild threads sharing weights: neither
  // is a per-step exchange of simulated ranks.
  if (dist.strategy == DistStrategy::async_ps || dist.strategy == DistStrategy::hogwild)
    throw ConfigError(std::string("dist.strategy: trainscale-sim simulates sync and weight_avg, not ") +
                      dist_strategy_name(dist.strategy) + "; run it with trainscale run");
}

}  // namespace

ExchangeOptions exchange_options_for(const DistConfig& dist) {
  refuse_unsimulated(dist);
  ExchangeOptions options;
  options.strategy = dist.strategy;
  options.algorithm = dist.allreduce;
  options.bucket_elements = std::max<int64_t>(1, static_cast<int64_t>(dist.bucket_mb * 1024.0 * 1024.0 / sizeof(float)));
  options.overlap = dist.overlap;
  return options;
}

Workload model_workload(const ResolvedConfig& cfg, const perf::ClusterSpec& cluster, int64_t workers,
                        int64_t workers_per_node) {
  refuse_unsimulated(cfg.run.dist);
  perf::check_modelled(cfg);  // the simulated ranks compute what the model prices
  // Ranks beyond the cluster's would share its nodes' cores unasked: refused as predict refuses them.
  perf::check_workers_fit(cluster, {workers}, std::max<int64_t>(1, cfg.run.threads), workers_per_node,
                          cfg.locate("workers"));
  perf::PredictOptions options;
  options.workers_per_node = workers_per_node;
  const perf::Prediction prediction = perf::predict(cfg.run, cluster, {workers}, options);
  Workload w;
  w.point = prediction.points.front();
  w.layers = prediction.layers;
  const perf::StepPrediction& step = w.point.step;
  w.data_s = step.data;
  w.forward_s = step.forward;
  w.update_s = step.update;
  w.batch_per_worker = w.point.batch_per_worker;
  w.compute_noise_cv = cluster.calibration.compute_noise_cv;
  // Parameter ranges in node order, as Net::finalize lays out the arena.
  std::vector<int64_t> offset(w.layers.size(), 0);
  for (size_t i = 0; i < w.layers.size(); ++i) {
    offset[i] = w.param_count;
    w.param_count += w.layers[i].parameters;
  }
  for (size_t i = w.layers.size(); i-- > 0;) {
    const perf::LayerTime& t = step.layers[i];
    w.backward.push_back({w.layers[i].name, t.seconds[1] + t.seconds[2], offset[i], w.layers[i].parameters});
  }
  read_graph(cfg.run, w);
  return w;
}

}  // namespace ts::sim
