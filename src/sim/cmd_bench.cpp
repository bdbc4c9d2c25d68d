// `trainscale-sim bench allreduce`: the all-reduce benchmark core of `trainscale bench
// allreduce` (dist/allreduce_bench.h) on N simulated ranks of a cluster file, each size and
// algorithm against the performance model's formula for the same cluster (perfmodel/
// allreduce_model.h): the check that the simulator and the alpha-beta-gamma model agree
// (docs/model.md "Simulation"). Results: a table on stdout, and CSV with --csv.
#include <boost/program_options.hpp>

#include <cmath>
#include <cstdio>
#include <fstream>
#include <iostream>

#include "app/command_options.h"
#include "core/error.h"
#include "core/memory_limits.h"
#include "core/strings.h"
#include "dist/allreduce.h"
#include "dist/allreduce_bench.h"
#include "dist/communicator.h"
#include "dist/smpi/simulation.h"
#include "perfmodel/allreduce_model.h"
#include "perfmodel/predict.h"
#include "sim/commands.h"
#include "sim/manifest_run.h"
#include "sim/mpi_selection.h"
#include "sim/platform.h"
#include "sim/simulation.h"

namespace po = boost::program_options;

namespace ts::sim {
namespace {

struct BenchPoint {
  std::string algorithm;
  int64_t bytes = 0;
  double simulated = 0, formula = 0;
};

std::vector<int64_t> sizes_between(int64_t min_bytes, int64_t max_bytes, double factor) {
  std::vector<int64_t> sizes;
  for (double b = static_cast<double>(min_bytes); b <= static_cast<double>(max_bytes); b *= factor) {
    const int64_t bytes = std::max<int64_t>(4, static_cast<int64_t>(b) / 4 * 4);
    if (sizes.empty() || bytes > sizes.back()) sizes.push_back(bytes);
  }
  return sizes;
}

// The simulated ranks: every algorithm at every size, one timed call each (a simulation has no
// noise to average away), on a shared buffer; rank 0 keeps the times.
void bench_rank(int rank, int argc, char** argv, const std::vector<AllreduceAlgorithm>& algorithms,
                const std::vector<int64_t>& sizes, float* buffer, std::vector<BenchPoint>& points, std::string& error) {
  try {
    MpiSession mpi(&argc, &argv);
    auto comm = Communicator::world();
    for (int64_t bytes : sizes)
      for (AllreduceAlgorithm a : algorithms) {
        const AllreduceBenchPoint p = bench_allreduce(*comm, {a, bytes / 4, 1, 0, false, buffer});
        if (rank == 0) points.push_back({allreduce_algorithm_name(a), bytes, p.time_avg, 0});
      }
  } catch (const std::exception& e) {
    if (error.empty()) error = "rank " + std::to_string(rank) + ": " + e.what();
  }
}

po::options_description bench_options() {
  po::options_description opts(
      "usage: trainscale-sim bench allreduce --cluster CLUSTER.yaml --workers N [options]\n\n"
      "Runs trainscale's all-reduce algorithms (the core of `trainscale bench allreduce`) on N\n"
      "simulated ranks of the cluster file, one call per size and algorithm, and prints the\n"
      "simulated time per call beside the performance model's alpha-beta-gamma formula for the same\n"
      "cluster and placement (ratio = simulated / formula). Byte sizes accept K, M, G suffixes.\n"
      "Exit codes: 0 ok, 1 runtime failure, 2 usage error.\n\noptions");
  opts.add_options()("help,h", "show this help")
      ("cluster", po::value<std::string>(), "cluster file (configs/clusters/*.yaml)")
      ("cluster-set", po::value<std::vector<std::string>>()->composing(), "override a cluster-file key (repeatable)")
      ("workers", po::value<int>(), "simulated ranks")
      ("threads", po::value<int>(), "compute threads per rank: ranks per node = cores / threads (default: one rank per node)")
      ("algorithms", po::value<std::string>()->default_value("ring"), "comma-separated: mpi, ring, tree, ps")
      ("min-bytes", po::value<std::string>()->default_value("4K"), "smallest message")
      ("max-bytes", po::value<std::string>()->default_value("64M"), "largest message")
      ("factor", po::value<double>()->default_value(4.0), "size multiplier between steps (> 1)")
      ("network-model", po::value<std::string>()->default_value("CM02"), "SimGrid network model: CM02, SMPI, LV08")
      ("coll-selector", po::value<std::string>(), "SMPI collective selector for mpi (default: the cluster's mpi.allreduce)")
      ("cfg", po::value<std::vector<std::string>>()->composing(), "a SimGrid setting key:value (repeatable)")
      ("csv", po::value<std::string>(), "also write the rows to this CSV file");
  return opts;
}

// "4096", "64K", "16M" (binary multiples, core/memory_limits.h parse_byte_size) -> bytes.
int64_t bytes_of(const std::string& flag, const std::string& text) {
  const std::optional<int64_t> bytes = parse_byte_size(text);
  if (!bytes || *bytes < 4) throw ConfigError(flag + " " + text + ": expected a byte count of at least 4, e.g. 4096, 64K, 16M");
  return *bytes;
}

void print_and_write(const std::vector<BenchPoint>& points, int workers, const std::string& cluster, const std::string& csv) {
  std::printf("# trainscale-sim bench allreduce: %d simulated ranks on %s; seconds per call\n", workers, cluster.c_str());
  std::printf("%12s %10s %14s %14s %8s\n", "bytes", "algorithm", "simulated(s)", "formula(s)", "ratio");
  std::ofstream out;
  if (!csv.empty()) {
    out.open(csv);
    if (!out) throw RuntimeError(csv + ": cannot write the CSV file");
    out << "cluster,workers,algorithm,bytes,simulated_s,formula_s,ratio\n";
  }
  for (const BenchPoint& p : points) {
    const double ratio = p.formula > 0 ? p.simulated / p.formula : std::nan("");
    std::printf("%12lld %10s %14.6g %14.6g %8.4f\n", static_cast<long long>(p.bytes), p.algorithm.c_str(), p.simulated,
                p.formula, ratio);
    if (out) out << cluster << "," << workers << "," << p.algorithm << "," << p.bytes << "," << p.simulated << ","
                 << p.formula << "," << ratio << "\n";
  }
}

}  // namespace

int command_bench(const std::vector<std::string>& args) {
  if (args.empty() || args[0] != "allreduce")
    throw ConfigError("usage: trainscale-sim bench allreduce --cluster CLUSTER.yaml --workers N [options]");
  po::options_description opts = bench_options();
  const std::optional<po::variables_map> parsed = parse_command_options(std::vector<std::string>(args.begin() + 1, args.end()), opts);
  if (!parsed) return kExitOk;
  const po::variables_map& vm = *parsed;
  if (!vm.count("cluster") || !vm.count("workers"))
    throw ConfigError("--cluster CLUSTER.yaml and --workers N are required (see trainscale-sim bench allreduce --help)");
  const int workers = vm["workers"].as<int>();
  if (workers < 1) throw ConfigError("--workers " + std::to_string(workers) + ": at least 1");
  const perf::ClusterSpec cluster =
      perf::load_cluster_file(vm["cluster"].as<std::string>(), option_strings(vm, "cluster-set"));
  std::vector<AllreduceAlgorithm> algorithms;
  for (const std::string& name : split(vm["algorithms"].as<std::string>(), ','))
    if (!name.empty()) algorithms.push_back(parse_allreduce_algorithm(name));
  const double factor = vm["factor"].as<double>();
  if (!(factor > 1.0)) throw ConfigError("--factor: must be greater than 1");
  const std::vector<int64_t> sizes = sizes_between(bytes_of("--min-bytes", vm["min-bytes"].as<std::string>()),
                                                   bytes_of("--max-bytes", vm["max-bytes"].as<std::string>()), factor);
  const int64_t threads = vm.count("threads") ? vm["threads"].as<int>() : cluster.node.cores;
  // Ranks beyond the cluster's would share its nodes unasked: refused as predict and run refuse them.
  perf::check_workers_fit(cluster, {workers}, threads, 0, "--workers " + std::to_string(workers), {"--threads N", ""});
  const perf::Placement placement = perf::place_workers(cluster, workers, threads);

  RunConfig run;  // only mpi_flavor: any matters here
  const MpiSelection mpi = select_mpi(run, cluster, vm.count("coll-selector") ? vm["coll-selector"].as<std::string>() : "");
  SimulationSettings settings{vm["network-model"].as<std::string>(), mpi.coll_selector, mpi.allreduce, mpi.extra};
  for (const std::string& line : option_strings(vm, "cfg")) settings.extra.push_back(line);
  set_simulated_memory_bandwidth(cluster.gamma_s_per_byte() > 0 ? 3.0 / cluster.gamma_s_per_byte() : 0.0);
  Simulation simulation(settings);
  const Platform platform = build_platform(cluster, placement);
  float* buffer = static_cast<float*>(simulated_shared_block(static_cast<size_t>(sizes.back())));
  std::vector<BenchPoint> points;
  std::string error;
  simulation.run(platform.rank_hosts, [&](int rank, int argc, char** argv) {
    bench_rank(rank, argc, argv, algorithms, sizes, buffer, points, error);
  });
  if (!error.empty()) throw RuntimeError(error);
  if (points.size() != sizes.size() * algorithms.size())
    throw RuntimeError("the simulation stalled after " + std::to_string(points.size()) + " of " +
                       std::to_string(sizes.size() * algorithms.size()) + " measurements");
  for (BenchPoint& p : points)
    p.formula = perf::AllreduceModel(cluster, p.algorithm, placement).seconds(static_cast<double>(p.bytes));
  std::cout << "# " << platform.description << "; MPI " << mpi.flavor << "\n";
  print_and_write(points, workers, cluster.name, vm.count("csv") ? vm["csv"].as<std::string>() : "");
  return kExitOk;
}

}  // namespace ts::sim
