// `trainscale bench allreduce`: the all-reduce benchmark in the manner of nccl-tests. Message
// sizes from --min-bytes to --max-bytes by --factor; per size and algorithm, --warmup untimed
// calls, then --iters timed calls, each timed on every rank; each rank's mean time per call is
// reduced to min/avg/max over ranks, and each call's slowest rank to min/max/stdev over the
// calls (the call-to-call spread). algbw = bytes / time_avg, busbw = algbw * 2(n-1)/n (the
// bytes each rank must move in a bandwidth-optimal all-reduce, so busbw compares across world
// sizes; with one rank busbw = algbw by convention). Each size runs every algorithm before the
// next size (so `vs_mpi`, busbw relative to MPI_Allreduce at the same size, compares calls that
// saw the same machine state); rank 0 then prints one block per algorithm in nccl-tests' layout,
// in-place columns only (trainscale's all-reduce sums in place; there is no out-of-place call
// to time), each block closed by its average busbw. A correctness check (on by default) counts
// wrong elements against the exact sum. nccl (CUDA builds) runs on a device buffer per rank and
// is checked against MPI_Allreduce of the same data; it is refused before MPI starts where it
// cannot run (exit 2).
#include <boost/program_options.hpp>

#include <algorithm>
#include <cmath>
#include <cstdio>
#include <iostream>
#include <sstream>
#include <string>
#include <vector>

#include "app/command_errors.h"
#include "app/command_options.h"
#include "app/commands.h"
#include "core/build_info.h"
#include "core/error.h"
#include "core/memory_limits.h"
#include "core/strings.h"
#include "core/timer.h"
#include "dist/allreduce.h"
#include "dist/allreduce_bench.h"
#include "dist/communicator.h"
#include "metrics/allreduce_file.h"

namespace po = boost::program_options;

namespace ts {
namespace {

const char* kBenchAllreduceUsage = "usage: trainscale bench allreduce [options]      (under mpirun -np N for N ranks)\n";
const char* kBenchUsage =
    "usage: trainscale bench allreduce [options]      (under mpirun -np N for N ranks)\n"
    "       trainscale bench io --config FILE.yaml [--set ...] --out FILE.h5 [--repeats N] [--steps N]\n"
    "       trainscale bench checkpoint --model M --storage local|nfs|blob --root DIR|s3://B/P [--out FILE.h5]\n";

// "4096", "64K", "16M", "1G" (binary multiples, core/memory_limits.h parse_byte_size) -> bytes.
int64_t parse_bytes(const std::string& flag, const std::string& text) {
  const std::optional<int64_t> bytes = parse_byte_size(text);
  if (!bytes || *bytes < 4)
    throw ConfigError(flag + " " + text + ": expected a byte count of at least 4 (one float), e.g. 4, 4096, 64K, 16M, 1G");
  return *bytes;
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

// The options; --iters, --warmup, --buffers and --out land in `b` as given.
po::options_description bench_options(BenchSettings& b) {
  po::options_description opts(
      std::string(kBenchAllreduceUsage) +
      "\nTimes each all-reduce algorithm (docs/allreduce.md) on float messages from --min-bytes to\n"
      "--max-bytes, growing by --factor (every algorithm at one size before the next size). Prints on\n"
      "rank 0 one block per algorithm in the layout of nccl-tests' all_reduce_perf: size (B), count\n"
      "(floats), type (float), redop (sum), then the in-place columns time (us: mean over ranks of\n"
      "each rank's mean per call), algbw = size/time and busbw = algbw*2(n-1)/n (GB/s; n ranks,\n"
      "n = 1: busbw = algbw) and #wrong (elements of one more call on known data that differ from\n"
      "the exact sum, over all ranks), then the spread over the timed calls of each call's slowest\n"
      "rank (min, max, stdev in us) and vs_mpi = busbw / busbw of mpi at the same size in this run\n"
      "(n/a without mpi in --algorithms). Each block ends with its average busbw over the sizes.\n"
      "Only in-place calls are measured: trainscale's all-reduce sums the caller's buffer in place\n"
      "and has no out-of-place form. Byte sizes accept K, M, G suffixes.\n"
      "Exit codes: 0 ok, 1 wrong elements or runtime failure, 2 usage error.\n\noptions");
  opts.add_options()("help,h", "show this help")
      ("algorithms", po::value<std::string>()->default_value("mpi,ring,tree,ps,shm,butterfly"),
       "comma-separated: mpi, ring, tree, ps, shm, butterfly, nccl (nccl: CUDA builds, on a device buffer of "
       "device local_rank % visible devices, one rank per GPU)")
      ("min-bytes", po::value<std::string>()->default_value("4"), "smallest message in bytes")
      ("max-bytes", po::value<std::string>()->default_value("64M"), "largest message in bytes")
      ("factor", po::value<double>()->default_value(2.0), "size multiplier between steps (> 1)")
      ("iters", po::value<int>(&b.iters)->default_value(20), "timed calls per size and algorithm (>= 1)")
      ("warmup", po::value<int>(&b.warmup)->default_value(5), "untimed calls before them (>= 0)")
      ("buffers", po::value<std::string>(&b.buffers)->default_value("shared"),
       "where the messages of the host algorithms live: shared (node shared memory, allocate_shared_floats: "
       "shm runs in place) or private (each rank's own heap: shm copies through its pipeline); nccl always "
       "reduces a device buffer")
      ("shm-chunk-kb", po::value<int64_t>()->default_value(32), "shm: KiB per pipeline buffer (1..65536; a run's dist.shm_chunk_kb)")
      ("shm-buffers", po::value<int64_t>()->default_value(64), "shm: pipeline buffers per rank (1..1024; a run's dist.shm_buffers)")
      ("check", "check results (the default)")
      ("no-check", "skip the correctness check")
      ("out", po::value<std::string>(&b.out), "write the results to this HDF5 file (trainscale-allreduce/1, docs/hdf5-schema.md)");
  return opts;
}

// The rest of `b` from the options, every value checked.
void complete_settings(const po::variables_map& vm, BenchSettings& b) {
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
  if (b.iters < 1) throw ConfigError("--iters " + std::to_string(b.iters) + ": must be at least 1");
  if (b.warmup < 0) throw ConfigError("--warmup " + std::to_string(b.warmup) + ": must be at least 0");
  if (b.buffers != "shared" && b.buffers != "private")
    throw ConfigError("--buffers " + b.buffers + ": accepted: shared, private");
  const int64_t chunk_kb = vm["shm-chunk-kb"].as<int64_t>(), shm_buffers = vm["shm-buffers"].as<int64_t>();
  if (chunk_kb < 1 || chunk_kb > 65536)
    throw ConfigError("--shm-chunk-kb " + std::to_string(chunk_kb) + ": must be in 1..65536 (KiB)");
  if (shm_buffers < 1 || shm_buffers > 1024)
    throw ConfigError("--shm-buffers " + std::to_string(shm_buffers) + ": must be in 1..1024");
  b.shm = {chunk_kb * 1024, static_cast<int>(shm_buffers)};
}

// What each algorithm is, for its block's title.
std::string algorithm_description(const std::string& name) {
  if (name == "mpi") return "MPI_Allreduce, the MPI library's own";
  if (name == "ring") return "reduce-scatter + all-gather around a ring";
  if (name == "tree") return "binomial-tree reduce + broadcast";
  if (name == "ps") return "parameter server: gather to rank 0, sum, broadcast";
  if (name == "shm") return "through node shared memory";
  if (name == "butterfly") return "recursive doubling";
  if (name == "nccl") return "ncclAllReduce on a device buffer";
  return name;
}

// The table's columns, nccl-tests' first (size .. #wrong, in-place only), then trainscale's.
constexpr int kColumnWidths[] = {12, 13, 7, 7, 9, 9, 9, 8, 9, 9, 9, 8};
constexpr size_t kColumns = sizeof kColumnWidths / sizeof kColumnWidths[0];

// The cells right-aligned in their columns, one space apart.
std::string table_line(const std::vector<std::string>& cells) {
  std::string line;
  for (size_t k = 0; k < cells.size() && k < kColumns; ++k) {
    if (k > 0) line += ' ';
    const size_t width = static_cast<size_t>(kColumnWidths[k]);
    if (cells[k].size() < width) line.append(width - cells[k].size(), ' ');
    line += cells[k];
  }
  return line;
}

// The block's column headers, over the columns of kColumnWidths.
const char* kBlockHeader =
    "#                                                         in-place                  calls of the slowest rank\n"
    "#       size         count    type   redop      time     algbw     busbw   #wrong       min       max     stdev   vs_mpi\n"
    "#        (B)    (elements)                      (us)    (GB/s)    (GB/s)               (us)      (us)      (us)\n";

std::string fixed(double v, int decimals) {
  char t[48];
  std::snprintf(t, sizeof t, "%.*f", decimals, v);
  return t;
}

void print_header(const BenchSettings& b, int n, const MpiLibrary& lib, const std::string& hosts, double bus_factor,
                  const std::string& start_time) {
  std::printf("# trainscale bench allreduce: %d rank(s), %s %s, hosts %s\n", n, lib.flavor.c_str(), lib.version.c_str(),
              hosts.c_str());
  std::printf("# trainscale %s (commit %s), started %s\n", TRAINSCALE_VERSION, TRAINSCALE_GIT_SHA, start_time.c_str());
  std::printf("# iters %d, warmup %d, check %s, %s buffers, shm window %lld x %lld KiB; float sum\n", b.iters,
              b.warmup, b.check ? "on" : "off", b.buffers.c_str(), static_cast<long long>(b.shm.buffers),
              static_cast<long long>(b.shm.chunk_bytes / 1024));
  std::printf("# in-place only: every algorithm sums the caller's buffer in place (there is no out-of-place\n"
              "#   call to time), so the out-of-place columns of nccl-tests are left out\n");
  std::printf("# time: mean over ranks of each rank's mean per call; algbw = size / time; busbw = algbw * %.4f\n",
              bus_factor);
  std::printf("# calls of the slowest rank: min, max and stdev over the %d timed calls of each call's time on its\n"
              "#   slowest rank; #wrong: elements of a checked call that differ from the exact sum, over all ranks\n",
              b.iters);
  std::printf("# vs_mpi: busbw / busbw of mpi at the same size in this run (n/a without mpi in --algorithms)\n");
  std::fflush(stdout);
}

// One algorithm's block: its rows over the sizes, its wrong elements and its average busbw.
// `mpi` is mpi's series of the same run, or null.
void print_algorithm_block(const AllreduceSeries& s, const AllreduceSeries* mpi, bool check) {
  std::printf("#\n# algorithm %s: %s\n%s", s.algorithm.c_str(), algorithm_description(s.algorithm).c_str(), kBlockHeader);
  double busbw_sum = 0;
  int64_t wrong = 0;
  for (size_t i = 0; i < s.bytes.size(); ++i) {
    const double mpi_busbw = mpi ? mpi->busbw[i] : 0.0;
    busbw_sum += s.busbw[i];
    if (s.wrong[i] > 0) wrong += s.wrong[i];
    std::printf("%s\n", table_line({std::to_string(s.bytes[i]), std::to_string(s.bytes[i] / 4), "float", "sum",
                                    fixed(s.time_avg[i] * 1e6, 2), fixed(s.algbw[i], 3), fixed(s.busbw[i], 3),
                                    check ? std::to_string(s.wrong[i]) : "n/a", fixed(s.call_min[i] * 1e6, 2),
                                    fixed(s.call_max[i] * 1e6, 2), fixed(s.call_stdev[i] * 1e6, 2),
                                    mpi_busbw > 0 ? fixed(s.busbw[i] / mpi_busbw, 2) : "n/a"})
                            .c_str());
  }
  if (check) std::printf("# Wrong elements       : %lld %s\n", static_cast<long long>(wrong), wrong == 0 ? "OK" : "FAILED");
  else std::printf("# Wrong elements       : n/a (--no-check)\n");
  std::printf("# Avg bus bandwidth    : %.3f GB/s (%s, mean over %zu sizes)\n",
              s.bytes.empty() ? 0.0 : busbw_sum / static_cast<double>(s.bytes.size()), s.algorithm.c_str(),
              s.bytes.size());
  std::fflush(stdout);
}

// Every algorithm at one size, appended to the result's series (rank 0's times; every rank's
// wrong counts). Returns the wrong elements counted.
int64_t measure_one_size(Communicator& comm, const BenchSettings& b, int64_t bytes, float* shared, double bus_factor,
                         AllreduceBenchResult& result) {
  int64_t wrong = 0;
  for (size_t k = 0; k < b.algorithms.size(); ++k) {
    const AllreduceBenchPoint p = bench_allreduce(comm, {b.algorithms[k], bytes / 4, b.iters, b.warmup, b.check, shared});
    if (p.wrong > 0) wrong += p.wrong;
    const double algbw = p.time_avg > 0 ? static_cast<double>(bytes) / p.time_avg / 1e9 : 0.0;
    AllreduceSeries& s = result.series[k];
    s.bytes.push_back(bytes);
    s.time_avg.push_back(p.time_avg);
    s.time_min.push_back(p.time_min);
    s.time_max.push_back(p.time_max);
    s.call_min.push_back(p.call_min);
    s.call_max.push_back(p.call_max);
    s.call_stdev.push_back(p.call_stdev);
    s.algbw.push_back(algbw);
    s.busbw.push_back(algbw * bus_factor);
    s.wrong.push_back(p.wrong);
  }
  return wrong;
}

// What the file records besides the series.
AllreduceBenchResult result_header(Communicator& comm, const BenchSettings& b, const MpiLibrary& lib) {
  AllreduceBenchResult result;
  result.version = TRAINSCALE_VERSION;
  result.git_sha = TRAINSCALE_GIT_SHA;
  result.start_time = utc_timestamp();
  result.iters = b.iters;
  result.warmup = b.warmup;
  result.check = b.check ? 1 : 0;
  result.in_place = 1;
  result.world_size = comm.size();
  result.mpi_flavor = lib.flavor;
  result.mpi_version = lib.version;
  result.mpi_tuning = join(lib.tuning, "; ");
  result.hosts = join(comm.gather_strings_to_root(comm.host()), ",");
  result.buffers = b.buffers;
  result.shm_chunk_bytes = b.shm.chunk_bytes;
  result.shm_buffers = b.shm.buffers;
  for (AllreduceAlgorithm a : b.algorithms) {
    AllreduceSeries s;
    s.algorithm = allreduce_algorithm_name(a);
    result.series.push_back(s);
  }
  return result;
}

int run_bench(Communicator& comm, const BenchSettings& b) {
  const int n = comm.size();
  const bool root = comm.rank() == 0;
  const MpiLibrary lib = mpi_library();
  AllreduceBenchResult result = result_header(comm, b, lib);
  const double bus_factor = n > 1 ? 2.0 * (n - 1) / n : 1.0;
  set_shm_window_options(b.shm);  // before the first shm call on this communicator
  // One message buffer for every size and algorithm, in shared memory unless --buffers private.
  float* shared = b.buffers == "shared" ? allocate_shared_floats(comm, b.sizes.back() / 4) : nullptr;
  if (root) print_header(b, n, lib, result.hosts, bus_factor, result.start_time);
  int64_t total_wrong = 0;
  for (int64_t bytes : b.sizes) total_wrong += measure_one_size(comm, b, bytes, shared, bus_factor, result);
  result.end_time = utc_timestamp();
  if (root) {
    const auto mpi_at = std::find(b.algorithms.begin(), b.algorithms.end(), AllreduceAlgorithm::mpi);
    const AllreduceSeries* mpi =
        mpi_at == b.algorithms.end() ? nullptr : &result.series[static_cast<size_t>(mpi_at - b.algorithms.begin())];
    for (const AllreduceSeries& s : result.series) print_algorithm_block(s, mpi, b.check);
    std::printf("#\n# wrong elements in total: %s\n", b.check ? std::to_string(total_wrong).c_str() : "n/a (--no-check)");
    if (!b.out.empty()) {
      write_allreduce_file(b.out, result);
      std::printf("# wrote %s\n", b.out.c_str());
    }
    std::fflush(stdout);
  }
  comm.barrier();  // no rank exits before rank 0 has written the file
  if (total_wrong == 0) return kExitOk;
  if (root) std::cerr << "trainscale bench allreduce: " << total_wrong << " wrong element(s); see the #wrong column\n";
  return kExitFailed;
}

int bench_allreduce_command(const std::vector<std::string>& args) {
  BenchSettings settings;
  const po::options_description opts = bench_options(settings);
  const std::optional<po::variables_map> parsed = parse_command_options(args, opts);
  if (!parsed) return kExitOk;
  complete_settings(*parsed, settings);
  MpiSession mpi(nullptr, nullptr);
  auto comm = Communicator::world();
  try {
    return mpi.set_exit_code(run_bench(*comm, settings));
  } catch (const ConfigError&) {
    throw;  // raised by every rank alike (nccl's device check is collective): exit 2 everywhere
  } catch (const std::exception& e) {
    if (comm->size() > 1) {
      // Other ranks may wait in a collective: report and take the whole job down.
      print_rank_error("trainscale bench allreduce", comm->rank(), comm->host(), e.what());
      comm->abort_all(kExitFailed);
    }
    throw;
  }
}

}  // namespace

int command_bench(const std::vector<std::string>& args) {
  if (args.empty() || args[0] == "--help" || args[0] == "-h") {
    std::cout << kBenchUsage << "\nbenchmarks:\n  allreduce   all-reduce algorithms (trainscale bench allreduce --help)\n"
              << "  io          the input pipeline alone, cold and warm (trainscale bench io --help)\n"
              << "  checkpoint  checkpoint write and read per storage (trainscale bench checkpoint --help)\n";
    if (args.empty())
      throw ConfigError("which benchmark? accepted: allreduce, io, checkpoint (e.g. trainscale bench allreduce --help)");
    return kExitOk;
  }
  if (args[0] == "io") return bench_io_command(std::vector<std::string>(args.begin() + 1, args.end()));
  if (args[0] == "checkpoint") return bench_checkpoint_command(std::vector<std::string>(args.begin() + 1, args.end()));
  if (args[0] != "allreduce")
    throw ConfigError("unknown benchmark '" + args[0] + "'; accepted: allreduce, io, checkpoint (see trainscale bench --help)");
  return bench_allreduce_command(std::vector<std::string>(args.begin() + 1, args.end()));
}

}  // namespace ts
