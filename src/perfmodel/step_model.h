// One data-parallel training step in the model (docs/model.md "Step model"): per-layer pass
// times from the roofline (times a calibrated efficiency), the gradient arena cut into the
// trainer's buckets (dist/bucket_plan.h), and the buckets' all-reduces either after backward
// or overlapped with it, one after another on the communication thread as the trainer does.
#pragma once

#include <array>
#include <cstdint>
#include <string>
#include <vector>

#include "perfmodel/allreduce_model.h"
#include "perfmodel/cluster.h"
#include "perfmodel/compression_model.h"
#include "perfmodel/layer_costs.h"

namespace ts::perf {

struct LayerTime {
  std::array<double, kPasses> seconds{};  // fp, bp_gc, bp_wu
  std::array<Bound, kPasses> bound{};
  double comm = 0;                        // all-reduce of this layer's gradients alone
  Bound layer_bound = Bound::compute;     // network when comm exceeds fp + bp, else the slowest pass's
  double total() const { return seconds[0] + seconds[1] + seconds[2]; }
};

struct StepOptions {
  bool overlap = true;          // dist.overlap
  double bucket_mb = 25;        // dist.bucket_mb (MiB)
  bool gemm_only = false;       // only conv and fc layers cost time (the material's model)
  bool weight_average = false;  // dist.strategy weight_avg: weights averaged after the update
  int64_t period = 1;           // weight_avg: every `period` steps
  std::string model;            // for calibrated per-layer efficiencies
  double data_bytes = 0;        // input bytes of one minibatch (copied into the net per step)
  double worker_cores = 0;      // cores one worker computes on (picks the calibrated efficiencies)
  // CPU nodes (0: a GPU node, whose compute does not use the cores): the node's cores, the
  // workers on it and each worker's compute threads. With overlap, each worker's communication
  // thread competes with them for the cores while both run (ContentionRates).
  double node_cores = 0;
  int64_t workers_on_node = 1;
  double compute_threads = 1;
  // The workers that wait for each other at the exchange, and the calibrated step-to-step
  // variation of a worker's compute (Calibration::compute_noise_cv; 0: none): the step waits
  // for the slowest of them (StepPrediction::straggle).
  int64_t workers = 1;
  double compute_noise_cv = 0;
  // dist.compression other than none: each bucket exchanged compressed (null: fp32 averages).
  const CompressionModel* compression = nullptr;
};

struct StepPrediction {
  std::vector<LayerTime> layers;  // as model_work's layers
  double forward = 0, backward = 0, update = 0;
  double compute = 0;             // forward + backward + update
  double comm = 0;                // exchange time of the step's buckets, overlapped or not
  double compress = 0, decompress = 0;  // the parts of comm in a compressor's codec
  double wire_bytes = 0;          // compressed exchanges: bytes this worker hands to the collectives
  double exposed_comm = 0;        // the part of comm that backward does not hide
  double contention = 0;          // backward's time lost to the communication thread's cores
  double data = 0;                // copying the minibatch in
  // What waiting for the slowest of the workers adds to the mean worker's compute: compute x
  // cv x E[max of `workers` standard normals] (per exchange; weight_avg's `period` steps vary
  // by sqrt(period) x cv between exchanges, so per step / sqrt(period)). 0 for one worker.
  double straggle = 0;
  double step = 0;                // compute + straggle + contention + exposed_comm + data
  // Per bucket: backward's progress (seconds of backward alone) when it is final, and when it is
  // reduced (seconds after backward starts, contention included).
  std::vector<double> bucket_ready, bucket_done;
};

// How fast backward and the communication thread progress while both run, against each alone
// (1: no contention). A node of C cores runs r workers of t compute threads each; a busy
// communication thread adds one thread per worker, and the threads share the cores evenly:
// each gets min(1, C / (r (t + 1))) of a core instead of min(1, C / (r t)). Two workers of one
// thread on two cores: both at 0.5.
struct ContentionRates {
  double backward = 1, comm = 1;
};
ContentionRates contention_rates(const StepOptions& options);

// E[max of n independent standard normals] (0 for n = 1; 0.564 for 2, 1.029 for 4, 1.424 for
// 8): how many standard deviations the slowest of n noisy workers lags the typical one.
double expected_max_standard_normal(int64_t n);

// Time of each pass of each layer for one worker at `rate` (efficiencies from the cluster's
// calibration measured at the worker's `worker_cores` threads, or at the calibration's own
// when 0 or not measured: the model's layer by name, else its kind, else 1).
std::vector<LayerTime> layer_times(const std::vector<LayerWork>& layers, const WorkerRate& rate, const Calibration& calibration,
                                   const std::string& model, bool gemm_only, double worker_cores = 0);

// The step: `layers` from model_work, `allreduce` for the gradient buckets.
StepPrediction predict_step(const std::vector<LayerWork>& layers, const WorkerRate& rate, const AllreduceModel& allreduce,
                            const Calibration& calibration, const StepOptions& options);

}  // namespace ts::perf
