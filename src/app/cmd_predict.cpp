// `trainscale predict`: the analytical model (src/perfmodel/, docs/model.md) of a run config on
// a cluster file, per worker count: the step split into compute / communication / exposed
// communication / contention (the communication thread's cores) / data, throughput, scaling efficiency and each layer's bound, printed as
// tables and (with --out) written as an HDF5 prediction file (docs/hdf5-schema.md).
#include <boost/program_options.hpp>

#include <algorithm>
#include <cstdio>
#include <iostream>
#include <sstream>
#include <string>
#include <vector>

#include "app/command_options.h"
#include "app/commands.h"
#include "config/config_id.h"
#include "config/run_config.h"
#include "core/build_info.h"
#include "core/error.h"
#include "core/strings.h"
#include "core/timer.h"
#include "dist/batch_partition.h"
#include "metrics/predict_file.h"
#include "perfmodel/cluster.h"
#include "perfmodel/predict.h"

namespace po = boost::program_options;

namespace ts {
namespace {

// "1,2,4" or "1..1024" (powers of two from the first to the last) or a mix: "1,3,8..64".
std::vector<int64_t> parse_worker_list(const std::string& text) {
  std::vector<int64_t> out;
  auto number = [&](const std::string& t) {
    size_t used = 0;
    long long v = -1;
    try {
      v = std::stoll(t, &used);
    } catch (const std::exception&) {
      used = 0;
    }
    if (used == 0 || used != t.size() || v < 1)
      throw ConfigError("--workers " + text + ": '" + t + "' is not a worker count >= 1; give e.g. 1,2,4 or 1..1024 "
                        "(powers of two)");
    return static_cast<int64_t>(v);
  };
  for (const std::string& item : split(text, ',')) {
    const size_t dots = item.find("..");
    if (dots == std::string::npos) {
      out.push_back(number(trim(item)));
      continue;
    }
    const int64_t lo = number(trim(item.substr(0, dots))), hi = number(trim(item.substr(dots + 2)));
    if (hi < lo) throw ConfigError("--workers " + text + ": range " + item + " runs backwards");
    int64_t w = lo;
    for (; w <= hi / 2; w *= 2) out.push_back(w);
    out.push_back(w);
    // A range doubles from its first count: one whose last count is not reached would end
    // short of it without a word.
    if (w != hi)
      throw ConfigError("--workers " + text + ": range " + item + " doubles from " + std::to_string(lo) + " and would stop at " +
                        std::to_string(w) + ", short of " + std::to_string(hi) + "; accepted: LO..HI with HI = LO x a power of "
                        "two (e.g. " + std::to_string(lo) + ".." + std::to_string(w) + " or " + std::to_string(lo) + ".." +
                        std::to_string(w * 2) + "), and lists; give " + std::to_string(lo) + ".." + std::to_string(w) + "," +
                        std::to_string(hi) + " to end at " + std::to_string(hi));
  }
  return out;
}

std::string fmt(const char* format, double v) { return format_number(format, v); }

PredictResult to_record(const perf::Prediction& p, const ResolvedConfig& cfg, const perf::ClusterSpec& cluster, bool gemm_only) {
  PredictResult r;
  r.config_yaml = cfg.yaml;
  r.config_id = config_id_of(cfg.yaml);
  r.cluster_yaml = perf::cluster_yaml(cluster);
  r.cluster_name = cluster.name;
  r.cluster_path = cluster.path;
  r.model = p.model;
  r.precision = p.precision;
  r.version = TRAINSCALE_VERSION;
  r.git_sha = TRAINSCALE_GIT_SHA;
  r.created = utc_timestamp();
  r.gemm_only = gemm_only ? 1 : 0;
  r.batch_per_worker = p.points.front().batch_per_worker;
  for (const perf::LayerWork& l : p.layers) {
    PredictLayerRow row{l.name, l.kind, l.descriptor, l.parameters};
    for (int k = 0; k < perf::kPasses; ++k) {
      const perf::PassWork& w = l.pass[static_cast<size_t>(k)];
      row.flops[k] = w.flops;
      row.bytes[k] = w.bytes;
      row.intensity[k] = w.intensity_gemm;
      row.intensity_blocked[k] = w.intensity_blocked;
    }
    r.layers.push_back(row);
  }
  for (const perf::WorkerPoint& pt : p.points) {
    const perf::StepPrediction& s = pt.step;
    r.workers.push_back(pt.workers);
    r.nodes.push_back(pt.placement.nodes);
    r.ranks_per_node.push_back(pt.placement.ranks_per_node);
    r.batch.push_back(pt.batch_per_worker);
    r.step_time.push_back(s.step);
    r.compute.push_back(s.compute);
    r.comm.push_back(s.comm);
    r.exposed_comm.push_back(s.exposed_comm);
    r.contention.push_back(s.contention);
    r.straggle.push_back(s.straggle);
    r.data.push_back(s.data);
    r.forward.push_back(s.forward);
    r.backward.push_back(s.backward);
    r.update.push_back(s.update);
    r.compress.push_back(s.compress);
    r.decompress.push_back(s.decompress);
    r.wire_bytes.push_back(s.wire_bytes);
    if (!pt.compression.empty()) r.compression = pt.compression;
    if (!pt.shares.empty()) r.shares.push_back(std::to_string(pt.workers) + ": " + shares_text(pt.shares));
    r.throughput.push_back(pt.throughput);
    r.scaling_efficiency.push_back(pt.scaling_efficiency);
    r.allreduce.push_back(std::to_string(pt.workers) + ": " + pt.allreduce);
    for (const perf::LayerTime& t : s.layers) {
      r.layer_fp.push_back(t.seconds[0]);
      r.layer_bp_gc.push_back(t.seconds[1]);
      r.layer_bp_wu.push_back(t.seconds[2]);
      r.layer_comm.push_back(t.comm);
      r.layer_bound.push_back(static_cast<int64_t>(t.layer_bound));
    }
  }
  return r;
}

// Each field starts with a space: a value wider than its column (a step of minutes on 1,000
// workers) still reads apart from its neighbours.
void print_points(std::ostream& os, const perf::Prediction& p, int64_t threads) {
  os << "workers  nodes  per_node  threads  batch   step_ms  compute_ms   comm_ms  exposed_ms  straggle_ms  contention_ms   data_ms  "
        "samples/s  efficiency  layers c/m/n\n";
  for (const perf::WorkerPoint& pt : p.points) {
    const perf::StepPrediction& s = pt.step;
    int bounds[3] = {0, 0, 0};
    for (const perf::LayerTime& t : s.layers) bounds[static_cast<int>(t.layer_bound)]++;
    os << fmt(" %6.0f", static_cast<double>(pt.workers)) << fmt(" %6.0f", static_cast<double>(pt.placement.nodes))
       << fmt(" %9.0f", static_cast<double>(pt.placement.ranks_per_node)) << fmt(" %8.0f", static_cast<double>(threads))
       << fmt(" %6.0f", static_cast<double>(pt.batch_per_worker)) << fmt(" %9.3f", s.step * 1e3)
       << fmt(" %11.3f", s.compute * 1e3) << fmt(" %9.3f", s.comm * 1e3) << fmt(" %11.3f", s.exposed_comm * 1e3)
       << fmt(" %12.3f", s.straggle * 1e3) << fmt(" %14.3f", s.contention * 1e3) << fmt(" %9.3f", s.data * 1e3) << fmt(" %10.1f", pt.throughput) << fmt(" %11.3f", pt.scaling_efficiency) << "  "
       << bounds[0] << "/" << bounds[1] << "/" << bounds[2] << (pt.placement.oversubscribed ? "  (oversubscribed)" : "")
       << "\n";
  }
}

// `text` left-aligned in `width` characters (never cut).
std::string padded(const std::string& text, size_t width) {
  return text.size() < width ? text + std::string(width - text.size(), ' ') : text;
}

// Whether layer i has work at the first or communication at the last worker count.
bool layer_has_work(const perf::Prediction& p, size_t i) {
  return p.points.front().step.layers[i].total() > 0 || p.points.back().step.layers[i].comm > 0;
}

// Layers with work, at the first and the last worker count (`--layers`); names and kinds whole.
void print_layers(std::ostream& os, const perf::Prediction& p) {
  const perf::WorkerPoint& first = p.points.front();
  const perf::WorkerPoint& last = p.points.back();
  size_t name_width = 5, kind_width = 4;  // "layer", "kind"
  for (size_t i = 0; i < p.layers.size(); ++i)
    if (layer_has_work(p, i)) {
      name_width = std::max(name_width, p.layers[i].name.size());
      kind_width = std::max(kind_width, p.layers[i].kind.size());
    }
  os << "\n" << padded("layer", name_width) << " " << padded("kind", kind_width)
     << "    fp_ms  bp_gc_ms  bp_wu_ms  I_gemm  I_block  comm_ms@" << last.workers << "  bound@" << first.workers
     << "  bound@" << last.workers << "\n";
  for (size_t i = 0; i < p.layers.size(); ++i) {
    if (!layer_has_work(p, i)) continue;
    const perf::LayerWork& l = p.layers[i];
    const perf::LayerTime& a = first.step.layers[i];
    const perf::LayerTime& b = last.step.layers[i];
    os << padded(l.name, name_width) << " " << padded(l.kind, kind_width) << " " << fmt("%8.3f", a.seconds[0] * 1e3)
       << fmt("%10.3f", a.seconds[1] * 1e3) << fmt("%10.3f", a.seconds[2] * 1e3) << fmt("%8.1f", l.pass[0].intensity_gemm)
       << fmt("%9.1f", l.pass[0].intensity_blocked) << fmt("%11.3f", b.comm * 1e3) << "  "
       << perf::bound_name(a.layer_bound) << "  " << perf::bound_name(b.layer_bound) << "\n";
  }
}

po::options_description predict_options() {
  po::options_description opts(
      "usage: trainscale predict --config RUN.yaml --cluster configs/clusters/NAME.yaml [--workers 1,2,4 | 1..1024]\n"
      "                          [--set key=value ...] [--cluster-set key=value ...] [--gemm-only] [--workers-per-node K]\n"
      "                          [--layers] [--out FILE.h5]\n\n"
      "The analytical performance model (docs/model.md): the run's model, layer by layer (FP, BP-GC, BP-WU as\n"
      "GEMMs), on the cluster's nodes (roofline with the blocked-GEMM intensity, calibrated efficiencies) and\n"
      "network (the run's dist.allreduce as an alpha-beta cost, buckets, overlap). Per worker count it prints\n"
      "and writes the placement (nodes, workers per node, threads per worker), the step time split into\n"
      "compute / communication / exposed communication / contention (backward's time lost to the\n"
      "communication thread on a CPU node's cores) / data, the throughput, the scaling efficiency against\n"
      "one worker, and how many layers are bound by compute, memory, network; --layers adds the table of\n"
      "each layer (the file always has it). Nothing is trained; no MPI is started.\n"
      "Workers fill each node's places first (one per GPU, or cores / threads), or --workers-per-node K\n"
      "per node; a worker count the cluster cannot hold at that layout is refused (exit 2). predict warns\n"
      "(stderr) when nodes are oversubscribed (more threads than cores, more ranks than GPUs) and when the\n"
      "default placement packs several workers on a node while the cluster has nodes to spare.\n"
      "dist.compression is priced from the codec rates in the cluster file's calibration.compression\n"
      "(trainscale calibrate measures them); unequal shares (dist.partition) and a slowed rank\n"
      "(dist.emulate_slowdown) rank by rank, the step being the slowest rank's; async_ps, hogwild and\n"
      "ranks of different backends or threads are not priced: such a config is refused.\n"
      "Exit codes: 0 ok, 2 usage/config error (a config or cluster key, a worker count or range, a worker\n"
      "count the cluster cannot hold, a config the model does not price).\n\noptions");
  opts.add_options()("help,h", "show this help")
      ("config", po::value<std::string>(), "run config YAML file (docs/config.md)")
      ("cluster", po::value<std::string>(), "cluster file (configs/clusters/*.yaml, docs/model.md)")
      ("workers", po::value<std::string>(),
       "worker counts: 1,2,4, or LO..HI doubling from LO (HI must be LO x a power of two: 1..1024, 3..48), or a mix "
       "(1..512,1000); at most what the cluster holds; default: the config's workers")
      ("set", po::value<std::vector<std::string>>()->composing(), "override a run-config key (repeatable)")
      ("cluster-set", po::value<std::vector<std::string>>()->composing(),
       "override a cluster-file key: interconnect.topology=mesh, interconnect.dims=[32,32], nodes=64 (repeatable)")
      ("gemm-only", "only conv and fc layers cost time (the material's node model)")
      ("workers-per-node", po::value<int64_t>()->default_value(0),
       "the run's layout: workers on each node (Slurm's --ntasks-per-node, the test bed's ranks per host); "
       "0: each node's cores / threads (GPU nodes: GPUs) filled first")
      ("layers", "also print the per-layer table (full layer names; every layer is in the --out file anyway)")
      ("out", po::value<std::string>(), "write the prediction file (HDF5, schema trainscale-predict/1)");
  return opts;
}

// How the workers are placed, in words: threads per worker, the rule that fills the nodes and
// what the cluster holds that way.
void print_placement(std::ostream& os, const perf::ClusterSpec& cluster, int64_t threads, int64_t workers_per_node) {
  os << "placement: " << threads << " thread(s) per worker (the run's threads); ";
  if (workers_per_node > 0) os << workers_per_node << " worker(s) per node (--workers-per-node)";
  else if (cluster.node.gpus > 0) os << "one worker per GPU, " << cluster.node.gpus << " per node";
  else
    os << "up to " << cluster.ranks_per_node(threads) << " per node (each node's " << cluster.node.cores
       << " cores filled first; --workers-per-node K sets the layout)";
  os << "\n           the cluster holds " << perf::cluster_worker_capacity(cluster, threads, workers_per_node)
     << " workers (" << cluster.nodes << " node(s))\n";
}

// Warnings on stderr for placements a reader could miss in the table: oversubscribed nodes, and
// workers packed on few nodes by the default placement while other nodes stay idle.
void warn_about_placement(const perf::Prediction& p, const perf::ClusterSpec& cluster, int64_t threads,
                          int64_t workers_per_node) {
  for (const perf::WorkerPoint& pt : p.points) {
    if (!pt.placement.oversubscribed) continue;
    std::cerr << "warning: at " << pt.workers << " workers, " << pt.placement.ranks_per_node << " worker(s) per node ";
    if (cluster.node.gpus > 0) std::cerr << "share the node's " << cluster.node.gpus << " GPUs";
    else
      std::cerr << "x " << threads << " thread(s) = " << pt.placement.ranks_per_node * threads << " threads on "
                << cluster.node.cores << " cores";
    std::cerr << ": the node is oversubscribed, and the prediction shares its "
              << (cluster.node.gpus > 0 ? "GPUs" : "cores") << " among them\n";
  }
  if (workers_per_node > 0 || cluster.node.gpus > 0) return;
  const perf::WorkerPoint* packed = nullptr;
  std::vector<std::string> counts;
  for (const perf::WorkerPoint& pt : p.points)
    if (pt.placement.ranks_per_node > 1 && pt.placement.nodes < cluster.nodes) {
      packed = &pt;
      counts.push_back(std::to_string(pt.workers));
    }
  if (!packed) return;
  std::cerr << "warning: the default placement packs workers on few nodes (at " << join(counts, ", ") << " workers"
            << (counts.size() > 1 ? "; at " + counts.back() : std::string()) << ": "
            << packed->placement.ranks_per_node << " workers of " << threads
            << " thread(s) on each of " << packed->placement.nodes << " of the cluster's " << cluster.nodes
            << " nodes), so they share each node's memory bandwidth and exchange inside it; if the run spreads "
               "them, give its layout with --workers-per-node K (e.g. 1), or more threads per worker (--set threads="
            << cluster.node.cores << " for one worker on all of a node's cores)\n";
}

}  // namespace

int command_predict(const std::vector<std::string>& args) {
  const po::options_description opts = predict_options();
  const std::optional<po::variables_map> parsed = parse_command_options(args, opts);
  if (!parsed) return kExitOk;
  const po::variables_map& vm = *parsed;
  if (!vm.count("config") || !vm.count("cluster"))
    throw ConfigError("--config RUN.yaml and --cluster CLUSTER.yaml are required (see trainscale predict --help)");
  const ResolvedConfig cfg = load_run_config(vm["config"].as<std::string>(), option_strings(vm, "set"));
  perf::check_modelled(cfg);
  const perf::ClusterSpec cluster = perf::load_cluster_file(vm["cluster"].as<std::string>(), option_strings(vm, "cluster-set"));
  const std::vector<int64_t> workers =
      vm.count("workers") ? parse_worker_list(vm["workers"].as<std::string>()) : std::vector<int64_t>{cfg.run.workers};
  perf::PredictOptions options;
  options.gemm_only = vm.count("gemm-only") > 0;
  options.workers_per_node = vm["workers-per-node"].as<int64_t>();
  if (options.workers_per_node < 0)
    throw ConfigError("--workers-per-node " + std::to_string(options.workers_per_node) +
                      ": must be >= 1, or 0 to fill each node's cores first");
  const int64_t threads = std::max<int64_t>(1, cfg.run.threads);
  perf::check_workers_fit(cluster, workers, threads, options.workers_per_node,
                          vm.count("workers") ? "--workers " + vm["workers"].as<std::string>() : cfg.locate("workers"));
  const perf::Prediction p = perf::predict(cfg.run, cluster, workers, options);

  std::cout << "model " << p.model << " (" << p.precision << ") on " << cluster.name << " (" << cluster.path << ")"
            << (options.gemm_only ? ", conv and fc only" : "") << "\n"
            << "all-reduce at " << p.points.back().workers << " workers: " << p.points.back().allreduce << "\n";
  print_placement(std::cout, cluster, threads, options.workers_per_node);
  if (!p.points.back().compression.empty())
    std::cout << "compression: " << p.points.back().compression << " (comm_ms includes encoding and decoding)\n";
  for (const perf::WorkerPoint& pt : p.points)
    if (!pt.shares.empty())
      std::cout << "shares at " << pt.workers << " workers: " << shares_text(pt.shares)
                << " (the row is the slowest rank's: its batch and step)\n";
  std::cout << "\n";
  print_points(std::cout, p, threads);
  if (vm.count("layers")) print_layers(std::cout, p);
  else std::cout << "(" << p.layers.size() << " layers: the per-layer table with --layers)\n";
  std::cout.flush();
  warn_about_placement(p, cluster, threads, options.workers_per_node);
  if (vm.count("out")) {
    const std::string out = vm["out"].as<std::string>();
    write_predict_file(out, to_record(p, cfg, cluster, options.gemm_only));
    std::cout << "\nwrote " << out << "\n";
  }
  return kExitOk;
}

}  // namespace ts
