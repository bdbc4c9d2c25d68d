// What one simulated worker computes per step, in modelled seconds (docs/model.md
// "Simulation"): the performance model's per-layer times (perfmodel/: roofline with the
// cluster's calibrated efficiencies, where `trainscale calibrate` measured them) for the run's
// model, batch per worker and precision on the cluster's nodes, and the parameter ranges
// backward hands to the gradient exchange, layer by layer, as Net::backward does.
#pragma once

#include <cstdint>
#include <string>
#include <vector>

#include "config/run_config.h"
#include "dist/exchange_strategy.h"
#include "nn/layer.h"
#include "perfmodel/predict.h"

namespace ts::sim {

// One layer of backward: its modelled seconds (BP-GC + BP-WU) and the gradient range it makes
// final (count 0 for layers without parameters).
struct BackwardLayer {
  std::string name;
  double seconds = 0;
  int64_t offset = 0, count = 0;
};

struct Workload {
  perf::WorkerPoint point;             // the model's prediction for this worker count
  std::vector<perf::LayerWork> layers; // node order, the loss included
  double data_s = 0, forward_s = 0, update_s = 0;
  std::vector<BackwardLayer> backward;  // in backward order: the last layer first
  int64_t param_count = 0, state_count = 0;
  int64_t batch_per_worker = 0;
  std::vector<LayerInfo> table;         // Net::layer_table(): the run file's /model/layers
  int64_t flops_per_sample = 0;         // forward, Net::flops_per_sample()
  // The cluster's calibrated step-to-step variation of a rank's compute (0: none): each
  // simulated rank's forward and backward take 1 + cv z of their modelled time in a step, z a
  // standard normal drawn per rank and step, so a step waits for its slowest rank as a run does.
  double compute_noise_cv = 0;
};

// The workload of `cfg` on `workers` workers of `cluster`.
Workload model_workload(const ResolvedConfig& cfg, const perf::ClusterSpec& cluster, int64_t workers,
                        int64_t workers_per_node = 0);

// The exchange options a run's dist settings give (as the trainer's train/run_setup.cpp).
ExchangeOptions exchange_options_for(const DistConfig& dist);

}  // namespace ts::sim
