// `trainscale bench checkpoint`: a model-sized checkpoint written to and read back from one
// storage (train/checkpoint_bench.h), GB/s and seconds per repeat, optionally an HDF5 file.
#include <boost/program_options.hpp>

#include <cstdio>
#include <iostream>
#include <optional>

#include "app/command_options.h"
#include "app/commands.h"
#include "core/build_info.h"
#include "core/error.h"
#include "core/host_info.h"
#include "core/timer.h"
#include "metrics/checkpoint_io_file.h"
#include "train/checkpoint_bench.h"

namespace po = boost::program_options;

namespace ts {
namespace {

const char* kUsage =
    "usage: trainscale bench checkpoint --model M --storage local|nfs|blob --root DIR|s3://BUCKET/PREFIX\n"
    "                                   [--repeats N] [--endpoint URL] [--out FILE.h5]\n\n"
    "Checkpoint I/O per storage, as MLPerf Storage measures it: a checkpoint of the model's size (fp32\n"
    "parameters, SGD momentum and non-trainable state: resnet50 about 205 MB) of pseudo-random bytes is\n"
    "written (fsync'd, or one S3 PUT), read back from the storage (the page cache dropped first; object\n"
    "storage has no client cache), checked byte for byte (CRC-32C) and removed, --repeats times. Prints\n"
    "seconds and GB/s (1e9 bytes/s) per repeat and the medians; --out writes them with the machine and\n"
    "storage to an HDF5 file (trainscale-checkpoint-io/1, docs/hdf5-schema.md). blob reads credentials and\n"
    "the endpoint from the environment (AWS_ACCESS_KEY_ID, ..., AWS_ENDPOINT_URL) like dataset.storage blob.\n"
    "docs/data.md \"Checkpoint I/O\". Exit codes: 0 ok, 1 runtime failure (a write, read or check failed),\n"
    "2 usage error.\n";

CheckpointIoRecord record_of(const CheckpointBenchResult& r, const std::string& start, const std::string& end) {
  CheckpointIoRecord rec;
  const CheckpointBenchOptions& o = r.options;
  rec.text = {{"version", TRAINSCALE_VERSION}, {"git_sha", TRAINSCALE_GIT_SHA}, {"host", host_name()},
              {"cpu_model", host_cpu_model()}, {"start_time", start}, {"end_time", end}, {"model", o.model},
              {"storage", o.storage}, {"root", o.root}, {"file_system", r.file_system}, {"note", r.note}};
  rec.counts = {{"bytes", r.bytes}, {"parameters", r.parameters}, {"state", r.state},
                {"repeats", static_cast<int64_t>(o.repeats)}, {"seed", static_cast<int64_t>(o.seed)}};
  rec.reals = {{"write_gbps", r.write_gbps}, {"read_gbps", r.read_gbps}};
  rec.write_seconds = r.write_seconds;
  rec.read_seconds = r.read_seconds;
  return rec;
}

void print_result(const CheckpointBenchResult& r) {
  const CheckpointBenchOptions& o = r.options;
  std::printf("# checkpoint I/O: model %s, %lld bytes (%lld parameters, %lld state values); storage %s at %s (%s)\n",
              o.model.c_str(), static_cast<long long>(r.bytes), static_cast<long long>(r.parameters),
              static_cast<long long>(r.state), o.storage.c_str(), o.root.c_str(), r.file_system.c_str());
  if (!r.note.empty()) std::printf("# note: %s\n", r.note.c_str());
  std::printf("# %6s %12s %10s %12s %10s\n", "repeat", "write_s", "write_GB/s", "read_s", "read_GB/s");
  const double gb = static_cast<double>(r.bytes) / 1e9;
  for (size_t k = 0; k < r.write_seconds.size(); ++k)
    std::printf("  %6zu %12.4f %10.3f %12.4f %10.3f\n", k + 1, r.write_seconds[k], gb / r.write_seconds[k],
                r.read_seconds[k], gb / r.read_seconds[k]);
  std::printf("# median: write %.3f GB/s, read %.3f GB/s (every read checked: 0 wrong bytes)\n", r.write_gbps,
              r.read_gbps);
}

}  // namespace

int bench_checkpoint_command(const std::vector<std::string>& args) {
  po::options_description opts(std::string(kUsage) + "\noptions");
  CheckpointBenchOptions o;
  opts.add_options()("help,h", "show this help")
      ("model", po::value<std::string>(&o.model)->default_value("resnet50"), "the model whose checkpoint size is written")
      ("storage", po::value<std::string>(&o.storage)->default_value("local"), "local, nfs or blob")
      ("root", po::value<std::string>(&o.root), "directory (local, nfs) or s3://BUCKET/PREFIX (blob) to write to")
      ("endpoint", po::value<std::string>(&o.endpoint)->default_value(""), "blob: the S3 endpoint (default: AWS_ENDPOINT_URL)")
      ("repeats", po::value<int>(&o.repeats)->default_value(3), "write + read rounds, 1..1000")
      ("seed", po::value<uint64_t>(&o.seed)->default_value(1), "seed of the checkpoint's bytes")
      ("out", po::value<std::string>(), "HDF5 file to write the result to (trainscale-checkpoint-io/1)");
  const std::optional<po::variables_map> parsed = parse_command_options(args, opts);
  if (!parsed) return kExitOk;
  const po::variables_map& vm = *parsed;
  if (!vm.count("root")) throw ConfigError("--root is required: a directory, or s3://BUCKET/PREFIX for --storage blob");
  const std::string start = utc_timestamp();
  const CheckpointBenchResult result = run_checkpoint_bench(o);
  print_result(result);
  if (vm.count("out")) {
    write_checkpoint_io_file(vm["out"].as<std::string>(), record_of(result, start, utc_timestamp()));
    std::printf("checkpoint io file: %s\n", vm["out"].as<std::string>().c_str());
  }
  return kExitOk;
}

}  // namespace ts
