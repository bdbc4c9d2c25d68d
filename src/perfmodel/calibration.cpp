// See calibration.h: the all-reduce fit and the whole calibration in order.
#include "perfmodel/calibration.h"

#include <algorithm>
#include <cmath>
#include <set>

#include "core/host_info.h"
#include "core/strings.h"
#include "core/timer.h"
#include "dist/allreduce.h"
#include "dist/allreduce_bench.h"
#include "perfmodel/allreduce_model.h"

namespace ts::perf {
namespace {

std::string fixed(double v, const char* format = "%.1f") { return format_number(format, v); }

// Message sizes from 4 KiB to max_bytes by factors of 4: latency and bandwidth both show.
std::vector<int64_t> fit_sizes(int64_t max_bytes) {
  std::vector<int64_t> sizes;
  for (int64_t b = 4096; b <= std::max<int64_t>(4096, max_bytes); b *= 4) sizes.push_back(b);
  return sizes;
}

// Every host algorithm at each size; time_avg of rank 0's view, fitted per algorithm.
void calibrate_allreduce(Communicator& comm, const CalibrateOptions& o, const ClusterSpec& spec, Calibration& c,
                         std::ostream& log) {
  if (comm.size() < 2) {
    log << "all-reduce: skipped on one rank (run `mpirun -np 2 trainscale calibrate ...` to fit alpha and beta)\n";
    return;
  }
  const std::vector<int64_t> sizes = fit_sizes(o.max_allreduce_bytes);
  float* shared = allocate_shared_floats(comm, sizes.back() / 4);
  for (AllreduceAlgorithm a : all_allreduce_algorithms()) {
    std::vector<double> bytes, seconds;
    for (int64_t b : sizes) {
      // The best of two rounds: on a shared machine a round may lose its core to another job.
      const int iters = b >= (int64_t{4} << 20) ? 2 : 10;
      double best = 1e30;
      for (int round = 0; round < 2; ++round)
        best = std::min(best, bench_allreduce(comm, {a, b / 4, iters, 1, false, shared}).time_avg);
      bytes.push_back(static_cast<double>(b));
      seconds.push_back(best);
    }
    if (comm.rank() != 0) continue;
    const std::string name = allreduce_algorithm_name(a);
    const std::string formula = name == "mpi" ? spec.mpi.allreduce : name;
    const AllreduceFit f = fit_allreduce(formula, comm.size(), bytes, seconds);
    c.allreduce[name] = f;
    log << "all-reduce " << name << ": " << fixed(f.latency_s * 1e6) << " us + " << fixed(f.s_per_byte * 1e9, "%.3f")
        << " ns/byte at " << comm.size() << " ranks -> alpha " << fixed(f.alpha_s * 1e6, "%.2f") << " us, beta "
        << fixed(f.beta_s_per_byte * 1e9, "%.3f") << " ns/byte\n";
  }
}

// Ranks on several hosts (a cluster, the test bed of docs/multihost.md): the number of hosts
// becomes `nodes`, and rank 0's link to the first rank of another host the `network` level:
// alpha is half the median round trip of a one-float message, the bandwidth one 16 MiB message's
// bytes over half its round trip less alpha (best of three). Collective.
void calibrate_network(Communicator& comm, ClusterSpec& spec, std::ostream& log) {
  const std::vector<std::string> hosts = comm.gather_strings_to_root(comm.host());
  double peer = -1, host_count = 1;
  if (comm.rank() == 0) {
    host_count = static_cast<double>(std::set<std::string>(hosts.begin(), hosts.end()).size());
    for (size_t r = 1; r < hosts.size() && peer < 0; ++r)
      if (hosts[r] != hosts[0]) peer = static_cast<double>(r);
  }
  comm.broadcast(&peer, 1, 0);
  if (peer < 0) return;
  const int other = static_cast<int>(peer);
  const bool pinging = comm.rank() == 0, ponging = comm.rank() == other;
  auto round_trip = [&](std::vector<float>& message) {
    const double t0 = now_seconds();
    const auto n = static_cast<int64_t>(message.size());
    if (pinging) comm.send_floats(message.data(), n, other), comm.receive_floats(message.data(), n, other);
    if (ponging) comm.receive_floats(message.data(), n, 0), comm.send_floats(message.data(), n, 0);
    return now_seconds() - t0;
  };
  std::vector<float> small(1), large(int64_t{4} << 20);
  std::vector<double> small_rtt;
  for (int i = 0; i < 200; ++i) small_rtt.push_back(round_trip(small));
  std::sort(small_rtt.begin(), small_rtt.end());
  double large_rtt = 1e30;
  for (int i = 0; i < 3; ++i) large_rtt = std::min(large_rtt, round_trip(large));
  comm.barrier();
  if (!pinging) return;
  const double alpha = small_rtt[small_rtt.size() / 2] / 2;
  const double bytes = static_cast<double>(large.size() * sizeof(float));
  const double gbps = bytes * 8 / std::max(1e-9, large_rtt / 2 - alpha) / 1e9;
  spec.nodes = static_cast<int64_t>(host_count);
  spec.interconnect.levels.push_back(LinkLevel{"network", Topology::star, {}, alpha * 1e6, gbps});
  log << "network: " << spec.nodes << " hosts; rank 0 (" << hosts[0] << ") to rank " << other << " (" << hosts[other]
      << "): alpha " << fixed(alpha * 1e6, "%.2f") << " us, " << fixed(gbps, "%.3f") << " Gbit/s\n";
}

// Each model's layer times with `threads` threads, `budget_s` for all of them.
std::map<std::string, LayerTimes> time_models(const CalibrateOptions& o, int threads, double budget_s) {
  std::map<std::string, LayerTimes> out;
  const double each = budget_s / static_cast<double>(std::max<size_t>(1, o.models.size()));
  for (const std::string& model : o.models) out[model] = measure_layer_times(model, o.batch, threads, each);
  return out;
}

// Per-layer efficiencies of the times measured with `threads` threads, into `set`.
void calibrate_layers(const CalibrateOptions& o, int threads, const std::map<std::string, LayerTimes>& times,
                      const ClusterSpec& spec, LayerEfficiency& set, std::ostream& log) {
  for (const std::string& model : o.models) {
    set.layers[model] = layer_efficiency(model, o.batch, threads, spec, times.at(model));
    log << "layers of " << model << " (batch " << o.batch << ", " << threads << " threads):";
    for (const auto& [layer, e] : set.layers[model]) log << " " << layer << " " << fixed(e.fp, "%.2f") << "/" << fixed(e.bp, "%.2f");
    log << "\n";
  }
  set.kinds = kind_medians(set.layers);
}

}  // namespace

AllreduceFit fit_allreduce(const std::string& formula, int64_t ranks, const std::vector<double>& bytes,
                           const std::vector<double>& seconds) {
  // Least squares of T = a + b m.
  const double n = static_cast<double>(bytes.size());
  double sx = 0, sy = 0, sxx = 0, sxy = 0;
  for (size_t i = 0; i < bytes.size(); ++i) {
    sx += bytes[i];
    sy += seconds[i];
    sxx += bytes[i] * bytes[i];
    sxy += bytes[i] * seconds[i];
  }
  AllreduceFit f;
  f.ranks = ranks;
  const double denominator = n * sxx - sx * sx;
  f.s_per_byte = denominator > 0 ? std::max(0.0, (n * sxy - sx * sy) / denominator) : 0.0;
  // The intercept: the smallest residual a - over the sizes (least squares would let the large
  // messages decide it, and one slow small message on a shared machine would inflate it).
  double intercept = bytes.empty() ? 0.0 : 1e30;
  for (size_t i = 0; i < bytes.size(); ++i) intercept = std::min(intercept, seconds[i] - f.s_per_byte * bytes[i]);
  f.latency_s = std::max(0.0, intercept);
  // The formula's own terms at these ranks: latency count at the smallest message, byte
  // coefficient per message byte.
  const std::vector<std::string> formulas = formula_names();
  const bool own = std::find(formulas.begin(), formulas.end(), formula) != formulas.end();
  const std::string terms_of = own ? formula : "ring";
  const double m = 1 << 20;
  const CostTerms small = formula_terms(terms_of, ranks, bytes.empty() ? 4.0 : bytes.front(), {ranks});
  const CostTerms big = formula_terms(terms_of, ranks, m, {ranks});
  f.alpha_s = small.latency > 0 ? f.latency_s / small.latency : f.latency_s;
  f.beta_s_per_byte = big.bytes > 0 ? f.s_per_byte / (big.bytes / m) : f.s_per_byte;
  return f;
}

ClusterSpec calibrate_machine(Communicator& comm, const CalibrateOptions& o, std::ostream& log) {
  const int threads = o.threads > 0 ? o.threads : static_cast<int>(std::max<int64_t>(1, host_hardware_threads()));
  ClusterSpec spec;
  spec.name = o.name;
  spec.nodes = 1;
  spec.node.cores = host_hardware_threads();
  spec.node.memory_gb = static_cast<double>(host_memory_bytes()) / 1e9;
  spec.interconnect.levels.push_back(LinkLevel{"shared_memory", Topology::star, {}, 1.0, 100.0});
  const std::string flavor = mpi_library().flavor;
  spec.mpi.allreduce = flavor == "mpich" || flavor == "intel" ? flavor : "ompi";
  spec.calibration.machine = host_cpu_model();
  spec.calibration.date = utc_timestamp().substr(0, 10);  // YYYY-MM-DD
  spec.calibration.threads = threads;
  spec.calibration.layer_batch = o.batch;
  // The network and the all-reduce fits first, on every rank. Then the layers on one core, on
  // every rank at once: a worker of a run of one worker per core computes while the others do,
  // sharing the caches and the memory bandwidth (and on the test bed's hosts, which share this
  // machine, the cores' neighbours); rank 0 keeps its times. Then rank 0 measures the node alone
  // while the others have finished (a rank waiting in a barrier would poll a core away from it).
  calibrate_network(comm, spec, log);
  calibrate_allreduce(comm, o, spec, spec.calibration, log);
  const double layers_s = 0.5 * o.budget_s;
  const std::map<std::string, LayerTimes> one_core = time_models(o, 1, threads > 1 ? layers_s / 2 : layers_s);
  if (comm.rank() == 0) {
    // How much a step's compute varies while every rank computes: the first model's (the
    // models' medians agree within noise; the first is the one the codecs are measured on).
    spec.calibration.compute_noise_cv = one_core.at(o.models.front()).step_noise_cv;
    log << "compute noise (" << o.models.front() << ", one core, every rank computing): cv "
        << fixed(spec.calibration.compute_noise_cv, "%.3f") << "\n";
    const double gemm_s = 0.1 * o.budget_s, triad_s = 0.1 * o.budget_s;
    for (Precision precision : {Precision::fp32, Precision::bf16}) {
      const double gflops = measure_gemm_gflops(precision, threads, 1024, gemm_s / 2);
      if (gflops > 0) spec.node.peak_gflops[precision_name(precision)] = gflops;
      log << "gemm " << precision_name(precision) << ": " << (gflops > 0 ? fixed(gflops) + " GFLOP/s" : "not supported") << "\n";
    }
    spec.node.memory_bandwidth_gbs = measure_triad_gbs(threads, int64_t{64} << 20, triad_s);
    log << "memory (triad): " << fixed(spec.node.memory_bandwidth_gbs) << " GB/s\n";
    // The shared-memory link: a copy through memory moves each byte in and out.
    spec.interconnect.levels[0].bandwidth_gbps = spec.node.memory_bandwidth_gbs * 8.0 / 2.0;
    // At the run's thread count (alone: a run of one worker takes every core), and on one core
    // (a worker of a run with more ranks than cores / threads; measured above).
    calibrate_layers(o, threads, threads > 1 ? time_models(o, threads, layers_s / 2) : one_core, spec, spec.calibration,
                     log);
    if (threads > 1) calibrate_layers(o, 1, one_core, spec, spec.calibration.at_threads[1], log);
    spec.calibration.compression = measure_codec_rates(o.models.front(), o.batch, 0.1 * o.budget_s);
    for (const auto& [kind, r] : spec.calibration.compression)
      log << "compression " << kind << " (" << o.models.front() << "'s gradients): encode "
          << fixed(r.encode_s_per_element * 1e9, "%.3g") << " ns, decode " << fixed(r.decode_s_per_element * 1e9, "%.3g")
          << " ns per element\n";
  }
  spec.source = "trainscale calibrate on " + host_name() + " (" + spec.calibration.machine + "), " + spec.calibration.date +
                ": gemm peak, triad bandwidth, compressor codecs, layer efficiency (batch " + std::to_string(o.batch) + ", " +
                std::to_string(threads) + " threads)" + (comm.size() > 1 ? ", all-reduce fits at " +
                std::to_string(comm.size()) + " ranks" : "") +
                (spec.nodes > 1 ? " on " + std::to_string(spec.nodes) + " hosts, their network measured by ping-pong" : "");
  return spec;
}

}  // namespace ts::perf
