// `trainscale bench allreduce`: the all-reduce benchmark in the manner of nccl-tests. Message
// sizes from --min-bytes to --max-bytes by --factor; per size and algorithm, --warmup untimed
// calls, then --iters timed calls; each rank's mean time per call is reduced to min/avg/max
// over ranks. algbw = bytes / time_avg, busbw = algbw * 2(n-1)/n (the bytes each rank must move
// in a bandwidth-optimal all-reduce, so busbw compares across world sizes; with one rank
// busbw = algbw by convention). Each size runs every algorithm before its rows are printed, so
// each row also shows its busbw relative to `mpi` (MPI_Allreduce) measured in the same run. A
// correctness check (on by default) counts wrong elements. nccl (CUDA builds) runs on a device
// buffer per rank and is checked against MPI_Allreduce of the same data; it is refused before
// MPI starts where it cannot run (exit 2).
#include <boost/program_options.hpp>

#include <algorithm>
#include <cmath>
#include <cstdio>
#include <iostream>
#include <sstream>

#include "app/command_options.h"
#include "app/commands.h"
#include "core/error.h"
#include "core/strings.h"
#include "dist/allreduce.h"
#include "dist/allreduce_bench.h"
#include "dist/communicator.h"
#include "metrics/allreduce_file.h"

namespace po = boost::program_options;

namespace ts {
namespace {

const char* kBenchUsage =
    "usage: trainscale bench allreduce [options]      (under mpirun -np N for N ranks)\n"
    "       trainscale bench io --config FILE.yaml [--set ...] --out FILE.h5 [--repeats N] [--steps N]\n";

// "4096", "64K", "16M", "1G" (binary multiples) -> bytes.
int64_t parse_bytes(const std::string& flag, const std::string& text) {
  size_t end = 0;
  long long v = -1;
  try {
    v = std::stoll(text, &end);
  } catch (const std::exception&) {
    end = 0;
  }
  int64_t mult = 1;
  std::string suffix = text.substr(end);
  if (suffix == "K" || suffix == "k") mult = int64_t{1} << 10;
  else if (suffix == "M" || suffix == "m") mult = int64_t{1} << 20;
  else if (suffix == "G" || suffix == "g") mult = int64_t{1} << 30;
  else if (!suffix.empty()) end = 0;
  if (end == 0 || v < 1 || v > (int64_t{1} << 40) || v * mult < 4)
    throw ConfigError(flag + " " + text + ": expected a byte count of at least 4 (one float), e.g. 4, 4096, 64K, 16M, 1G");
  return static_cast<int64_t>(v) * mult;
}

std::vector<AllreduceAlgorithm> parse_algorithms(const std::string& list) {
  std::vector<AllreduceAlgorithm> out;
  for (const std::string& name : split(list, ','))
    if (!name.empty()) {
      try {
        out.push_back(parse_allreduce_algorithm(name));
      } catch (const ConfigError& e) {
        throw ConfigError(std::string("--algorithms: ") + e.what());
      }
      // nccl without the CUDA build or without a device: refused before MPI starts (exit 2).
      const std::string why = allreduce_algorithm_unavailable_reason(out.back());
      if (!why.empty()) throw ConfigError("--algorithms " + name + ": " + why);
    }
  if (out.empty()) throw ConfigError("--algorithms: empty list; accepted: mpi, ring, tree, ps, shm, butterfly, nccl (comma-separated)");
  return out;
}

// min, min*f, min*f^2, ... <= max, rounded down to whole floats, strictly increasing.
std::vector<int64_t> message_sizes(int64_t min_bytes, int64_t max_bytes, double factor) {
  std::vector<int64_t> sizes;
  for (double b = static_cast<double>(min_bytes); b <= static_cast<double>(max_bytes); b *= factor) {
    int64_t bytes = static_cast<int64_t>(b) / 4 * 4;
    if (sizes.empty() || bytes > sizes.back()) sizes.push_back(bytes);
  }
  return sizes;
}

// The benchmark's settings, checked before MPI starts.
struct BenchSettings {
  std::vector<AllreduceAlgorithm> algorithms;
  std::vector<int64_t> sizes;  // bytes
  int iters = 20, warmup = 5;
  bool check = true;
  std::string buffers = "shared";
  ShmWindowOptions shm;
  std::string out;  // "" = no file
};

po::options_description bench_options() {
  po::options_description opts(
      std::string(kBenchUsage) +
      "\nTimes each all-reduce algorithm (docs/distributed.md) on float messages from --min-bytes to\n"
      "--max-bytes, growing by --factor. Prints, on rank 0, per size and algorithm: time per call\n"
      "(us, avg/min/max over ranks of each rank's mean), algbw = bytes/time_avg and\n"
      "busbw = algbw*2(n-1)/n in GB/s (n ranks; n = 1: busbw = algbw), vs_mpi = busbw / busbw of\n"
      "mpi at the same size in this run (n/a without mpi in --algorithms), and the number of wrong\n"
      "elements of a checked call after the timed loop. Byte sizes accept K, M, G suffixes.\n"
      "Exit codes: 0 ok, 1 wrong elements or runtime failure, 2 usage error.\n\noptions");
  opts.add_options()("help,h", "show this help")
      ("algorithms", po::value<std::string>()->default_value("mpi,ring,tree,ps,shm,butterfly"),
       "comma-separated: mpi, ring, tree, ps, shm, butterfly, nccl (nccl: CUDA builds, on a device buffer of "
       "device local_rank % visible devices, one rank per GPU)")
      ("min-bytes", po::value<std::string>()->default_value("4"), "smallest message in bytes")
      ("max-bytes", po::value<std::string>()->default_value("64M"), "largest message in bytes")
      ("factor", po::value<double>()->default_value(2.0), "size multiplier between steps (> 1)")
      ("iters", po::value<int>()->default_value(20), "timed calls per size and algorithm (>= 1)")
      ("warmup", po::value<int>()->default_value(5), "untimed calls before them (>= 0)")
      ("buffers", po::value<std::string>()->default_value("shared"),
       "where the messages of the host algorithms live: shared (node shared memory, allocate_shared_floats: "
       "shm runs in place) or private (each rank's own heap: shm copies through its pipeline); nccl always "
       "reduces a device buffer")
      ("shm-chunk-kb", po::value<int64_t>()->default_value(32), "shm: KiB per pipeline buffer (1..65536; a run's dist.shm_chunk_kb)")
      ("shm-buffers", po::value<int64_t>()->default_value(64), "shm: pipeline buffers per rank (1..1024; a run's dist.shm_buffers)")
      ("check", "check results (the default)")
      ("no-check", "skip the correctness check")
      ("out", po::value<std::string>(), "write the results to this HDF5 file (trainscale-allreduce/1)");
  return opts;
}

BenchSettings bench_settings(const po::variables_map& vm) {
  BenchSettings b;
  if (vm.count("check") && vm.count("no-check")) throw ConfigError("--check and --no-check exclude each other");
  b.check = !vm.count("no-check");
  b.algorithms = parse_algorithms(vm["algorithms"].as<std::string>());
  const int64_t min_bytes = parse_bytes("--min-bytes", vm["min-bytes"].as<std::string>());
  const int64_t max_bytes = parse_bytes("--max-bytes", vm["max-bytes"].as<std::string>());
  if (max_bytes < min_bytes)
    throw ConfigError("--max-bytes " + std::to_string(max_bytes) + " is below --min-bytes " + std::to_string(min_bytes));
  const double factor = vm["factor"].as<double>();
  if (!(factor > 1.0) || !std::isfinite(factor))
    throw ConfigError("--factor " + std::to_string(factor) + ": must be a number greater than 1, e.g. 2");
  b.sizes = message_sizes(min_bytes, max_bytes, factor);
  b.iters = vm["iters"].as<int>();
  b.warmup = vm["warmup"].as<int>();
  if (b.iters < 1) throw ConfigError("--iters " + std::to_string(b.iters) + ": must be at least 1");
  if (b.warmup < 0) throw ConfigError("--warmup " + std::to_string(b.warmup) + ": must be at least 0");
  b.buffers = vm["buffers"].as<std::string>();
  if (b.buffers != "shared" && b.buffers != "private")
    throw ConfigError("--buffers " + b.buffers + ": accepted: shared, private");
  const int64_t chunk_kb = vm["shm-chunk-kb"].as<int64_t>(), shm_buffers = vm["shm-buffers"].as<int64_t>();
  if (chunk_kb < 1 || chunk_kb > 65536)
    throw ConfigError("--shm-chunk-kb " + std::to_string(chunk_kb) + ": must be in 1..65536 (KiB)");
  if (shm_buffers < 1 || shm_buffers > 1024)
    throw ConfigError("--shm-buffers " + std::to_string(shm_buffers) + ": must be in 1..1024");
  b.shm = {chunk_kb * 1024, static_cast<int>(shm_buffers)};
  if (vm.count("out")) b.out = vm["out"].as<std::string>();
  return b;
}

void print_header(const BenchSettings& b, int n, const MpiLibrary& lib, const std::string& hosts, double bus_factor) {
  std::printf("# trainscale bench allreduce: %d rank(s), %s %s, hosts %s\n", n, lib.flavor.c_str(), lib.version.c_str(),
              hosts.c_str());
  std::printf("# iters %d, warmup %d, check %s, %s buffers, shm window %lld x %lld KiB; time per call over ranks; "
              "busbw = algbw * %.4f\n",
              b.iters, b.warmup, b.check ? "on" : "off", b.buffers.c_str(), static_cast<long long>(b.shm.buffers),
              static_cast<long long>(b.shm.chunk_bytes / 1024), bus_factor);
  std::printf("%12s %12s %9s %12s %12s %12s %10s %10s %8s %8s\n", "size(B)", "count", "algorithm", "avg(us)", "min(us)",
              "max(us)", "algbw", "busbw", "vs_mpi", "wrong");
  std::printf("%12s %12s %9s %12s %12s %12s %10s %10s %8s %8s\n", "", "(floats)", "", "", "", "", "(GB/s)", "(GB/s)", "",
              "");
  std::fflush(stdout);
}

// Every algorithm at one size: appended to the result's series and printed on rank 0. Returns
// the wrong elements counted.
int64_t bench_one_size(Communicator& comm, const BenchSettings& b, int64_t bytes, float* shared, double bus_factor,
                       AllreduceBenchResult& result) {
  std::vector<AllreduceBenchPoint> points;
  for (AllreduceAlgorithm a : b.algorithms)
    points.push_back(bench_allreduce(comm, {a, bytes / 4, b.iters, b.warmup, b.check, shared}));
  auto algbw_of = [&](const AllreduceBenchPoint& p) { return p.time_avg > 0 ? static_cast<double>(bytes) / p.time_avg / 1e9 : 0.0; };
  const auto mpi_at = std::find(b.algorithms.begin(), b.algorithms.end(), AllreduceAlgorithm::mpi);
  const double mpi_busbw =
      mpi_at == b.algorithms.end() ? 0.0 : algbw_of(points[static_cast<size_t>(mpi_at - b.algorithms.begin())]) * bus_factor;
  int64_t wrong = 0;
  for (size_t k = 0; k < b.algorithms.size(); ++k) {
    const AllreduceBenchPoint& p = points[k];
    if (p.wrong > 0) wrong += p.wrong;
    const double algbw = algbw_of(p), busbw = algbw * bus_factor;
    AllreduceSeries& s = result.series[k];
    s.bytes.push_back(bytes);
    s.time_avg.push_back(p.time_avg);
    s.time_min.push_back(p.time_min);
    s.time_max.push_back(p.time_max);
    s.algbw.push_back(algbw);
    s.busbw.push_back(busbw);
    s.wrong.push_back(p.wrong);
    if (comm.rank() != 0) continue;
    char ratio[32] = "n/a";
    if (mpi_busbw > 0) std::snprintf(ratio, sizeof ratio, "%.2f", busbw / mpi_busbw);
    std::printf("%12lld %12lld %9s %12.2f %12.2f %12.2f %10.3f %10.3f %8s %8s\n", static_cast<long long>(bytes),
                static_cast<long long>(bytes / 4), s.algorithm.c_str(), p.time_avg * 1e6, p.time_min * 1e6,
                p.time_max * 1e6, algbw, busbw, ratio, p.wrong < 0 ? "n/a" : std::to_string(p.wrong).c_str());
    std::fflush(stdout);
  }
  return wrong;
}

int run_bench(Communicator& comm, const BenchSettings& b) {
  const int n = comm.size();
  const bool root = comm.rank() == 0;
  AllreduceBenchResult result;
  result.world_size = n;
  const MpiLibrary lib = mpi_library();
  result.mpi_flavor = lib.flavor;
  result.mpi_version = lib.version;
  result.mpi_tuning = join(lib.tuning, "; ");
  result.hosts = join(comm.gather_strings_to_root(comm.host()), ",");
  result.buffers = b.buffers;
  result.shm_chunk_bytes = b.shm.chunk_bytes;
  result.shm_buffers = b.shm.buffers;
  for (AllreduceAlgorithm a : b.algorithms) result.series.push_back({allreduce_algorithm_name(a), {}, {}, {}, {}, {}, {}, {}});
  const double bus_factor = n > 1 ? 2.0 * (n - 1) / n : 1.0;
  set_shm_window_options(b.shm);  // before the first shm call on this communicator
  // One message buffer for every size and algorithm, in shared memory unless --buffers private.
  float* shared = b.buffers == "shared" ? allocate_shared_floats(comm, b.sizes.back() / 4) : nullptr;
  if (root) print_header(b, n, lib, result.hosts, bus_factor);
  int64_t total_wrong = 0;
  for (int64_t bytes : b.sizes) total_wrong += bench_one_size(comm, b, bytes, shared, bus_factor, result);
  if (root) {
    std::printf("# wrong elements in total: %s\n", b.check ? std::to_string(total_wrong).c_str() : "n/a (--no-check)");
    if (!b.out.empty()) {
      write_allreduce_file(b.out, result);
      std::printf("# wrote %s\n", b.out.c_str());
    }
    std::fflush(stdout);
  }
  comm.barrier();  // no rank exits before rank 0 has written the file
  if (total_wrong == 0) return kExitOk;
  if (root) std::cerr << "trainscale bench allreduce: " << total_wrong << " wrong element(s); see the wrong column\n";
  return kExitFailed;
}

int bench_allreduce_command(const std::vector<std::string>& args) {
  const po::options_description opts = bench_options();
  const std::optional<po::variables_map> parsed = parse_command_options(args, opts);
  if (!parsed) return kExitOk;
  const po::variables_map& vm = *parsed;
  const BenchSettings settings = bench_settings(vm);
  int argc = 0;
  char** argv = nullptr;
  MpiSession mpi(&argc, &argv);
  auto comm = Communicator::world();
  try {
    return mpi.set_exit_code(run_bench(*comm, settings));
  } catch (const ConfigError&) {
    throw;  // raised by every rank alike (nccl's device check is collective): exit 2 everywhere
  } catch (const std::exception& e) {
    if (comm->size() > 1) {
      // Other ranks may wait in a collective: report and take the whole job down.
      std::cerr << "trainscale bench allreduce: rank " << comm->rank() << " on " << comm->host() << ": " << e.what()
                << "\n";
      std::cerr.flush();
      comm->abort_all(kExitFailed);
    }
    throw;
  }
}

}  // namespace

int command_bench(const std::vector<std::string>& args) {
  if (args.empty() || args[0] == "--help" || args[0] == "-h") {
    std::cout << kBenchUsage << "\nbenchmarks:\n  allreduce   all-reduce algorithms (trainscale bench allreduce --help)\n"
              << "  io          the input pipeline alone, cold and warm (trainscale bench io --help)\n";
    if (args.empty()) throw ConfigError("which benchmark? accepted: allreduce, io (e.g. trainscale bench allreduce --help)");
    return kExitOk;
  }
  if (args[0] == "io") return bench_io_command(std::vector<std::string>(args.begin() + 1, args.end()));
  if (args[0] != "allreduce")
    throw ConfigError("unknown benchmark '" + args[0] + "'; accepted: allreduce, io (see trainscale bench --help)");
  return bench_allreduce_command(std::vector<std::string>(args.begin() + 1, args.end()));
}

}  // namespace ts
