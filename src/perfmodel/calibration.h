// `trainscale calibrate`: measures this machine into a cluster file (docs/model.md
// "Calibration"): GEMM peak per precision (oneDNN through the cpu backend), memory bandwidth
// (a STREAM-like triad), per-layer efficiency of built-in models (measured / roofline, each
// layer timed inside the real net) and, on two or more ranks, every all-reduce algorithm's
// alpha and beta (`bench allreduce`'s measuring core, fitted).
#pragma once

#include <cstdint>
#include <map>
#include <ostream>
#include <string>
#include <vector>

#include "backend/backend.h"
#include "dist/communicator.h"
#include "perfmodel/cluster.h"

namespace ts::perf {

struct CalibrateOptions {
  std::string name = "local";
  std::vector<std::string> models = {"lenet", "resnet20"};
  int64_t batch = 64;             // minibatch of the per-layer measurement
  int threads = 0;                // compute threads (0: the machine's hardware threads)
  double budget_s = 90;           // about how long the whole measurement may take
  int64_t max_allreduce_bytes = 8 << 20;
};

// One precision's GEMM rate: a square fc (m = n = k = `size`) forward, best of the repetitions.
double measure_gemm_gflops(Precision precision, int threads, int64_t size, double budget_s);
// Triad a = b + s c over three arrays of `bytes_per_array`, on `threads` threads: the best
// rate, counting 3 x 8 bytes per element as STREAM does.
double measure_triad_gbs(int threads, int64_t bytes_per_array, double budget_s);
// The median forward and backward seconds of each node of `model`'s net (cpu backend, fp32,
// `batch`, `threads` threads), each layer timed inside the real net, in node order; and how much
// a whole step's forward + backward varies from step to step (Calibration::compute_noise_cv).
struct LayerTimes {
  std::vector<std::pair<double, double>> nodes;
  double step_noise_cv = 0;
};
LayerTimes measure_layer_times(const std::string& model, int64_t batch, int threads, double budget_s);
// roofline / measured time of each layer of `model` on a node described by `node_only` (its peak
// and bandwidth; no calibration): layer name -> efficiency.
std::map<std::string, PhaseEfficiency> layer_efficiency(const std::string& model, int64_t batch, int threads,
                                                        const ClusterSpec& node_only, const LayerTimes& measured);
// The median efficiency per layer kind over the layers of several models (fp and bp apart).
std::map<std::string, PhaseEfficiency> kind_medians(
    const std::map<std::string, std::map<std::string, PhaseEfficiency>>& layers);

// Each gradient compressor's encoding and decoding on this machine (cluster file
// `calibration.compression`): the real codec on one rank over `model`'s gradient arena after one
// step at `batch` (one bucket; PowerSGD on the model's weight matrices), the best of its
// repetitions, per element of the bucket (PowerSGD: of the matrices it compresses).
std::map<std::string, CodecRate> measure_codec_rates(const std::string& model, int64_t batch, double budget_s);

// A least-squares fit T = a + b m of an algorithm's times, turned into the alpha and beta of
// its formula at `ranks` ranks (allreduce_model.h formula_terms; selectors and nccl: ring's).
AllreduceFit fit_allreduce(const std::string& formula, int64_t ranks, const std::vector<double>& bytes,
                           const std::vector<double>& seconds);

// All of it: node facts and rates and layers on rank 0, the all-reduce fits on every rank
// (collective; skipped with a note on one rank). The result is valid on rank 0.
ClusterSpec calibrate_machine(Communicator& comm, const CalibrateOptions& options, std::ostream& log);

}  // namespace ts::perf
