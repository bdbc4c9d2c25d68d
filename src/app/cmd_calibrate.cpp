// `trainscale calibrate`: measures this machine into a cluster file (src/perfmodel/
// calibration.h, docs/model.md "Calibration"). Under mpirun -np N (N >= 2) it also fits every
// all-reduce algorithm's alpha and beta on N ranks; rank 0 writes the file.
#include <boost/program_options.hpp>

#include <algorithm>
#include <iostream>
#include <sstream>

#include "app/command_options.h"
#include "app/commands.h"
#include "core/error.h"
#include "core/file_io.h"
#include "core/strings.h"
#include "dist/communicator.h"
#include "nn/models.h"
#include "perfmodel/calibration.h"

namespace po = boost::program_options;

namespace ts {

int command_calibrate(const std::vector<std::string>& args) {
  po::options_description opts(
      "usage: [mpirun -np 2] trainscale calibrate --out configs/clusters/local.yaml [--budget-s 90]\n"
      "                          [--models lenet,resnet20] [--batch 64] [--threads N] [--max-bytes 8388608]\n\n"
      "Measures this machine for the performance model (docs/model.md \"Calibration\") and writes a cluster\n"
      "file: GEMM peak per precision (oneDNN through the cpu backend), memory bandwidth (a STREAM-like\n"
      "triad), each layer's efficiency (measured / roofline) in the built-in models given, each gradient\n"
      "compressor's encoding and decoding per element (its codec on one rank, over the first model's\n"
      "gradients), and, on 2 or more ranks, every all-reduce algorithm's alpha and beta (bench\n"
      "allreduce's core, least squares).\n"
      "--budget-s bounds the node measurements (GEMM 10%, triad 10%, layers 50%, compressors 10%); the\n"
      "all-reduce fits take a few seconds more. Exit codes: 0 ok, 1 runtime failure, 2 usage/config error.\n\noptions");
  perf::CalibrateOptions o;
  opts.add_options()("help,h", "show this help")
      ("out", po::value<std::string>(), "cluster file to write (YAML)")
      ("name", po::value<std::string>(&o.name)->default_value("local"), "the cluster's name in the file")
      ("models", po::value<std::string>()->default_value("lenet,resnet20"), "models whose layers are timed (comma-separated)")
      ("batch", po::value<int64_t>(&o.batch)->default_value(64), "minibatch of the layer timing")
      ("threads", po::value<int>(&o.threads)->default_value(0), "compute threads (0: every hardware thread)")
      ("budget-s", po::value<double>(&o.budget_s)->default_value(90.0), "seconds the node measurements may take")
      ("max-bytes", po::value<int64_t>(&o.max_allreduce_bytes)->default_value(int64_t{8} << 20),
       "largest all-reduce message of the fit");
  const std::optional<po::variables_map> parsed = parse_command_options(args, opts);
  if (!parsed) return kExitOk;
  const po::variables_map& vm = *parsed;
  if (!vm.count("out")) throw ConfigError("--out FILE.yaml is required (see trainscale calibrate --help)");
  o.models.clear();
  const std::vector<std::string> known = model_names();
  for (const std::string& m : split(vm["models"].as<std::string>(), ','))
    if (!m.empty()) {
      if (std::find(known.begin(), known.end(), m) == known.end())
        throw ConfigError("--models: unknown model '" + m + "'; known models: " + join(known));
      o.models.push_back(m);
    }
  if (o.models.empty()) throw ConfigError("--models: give at least one model; known models: " + join(known));
  if (o.batch < 1) throw ConfigError("--batch must be >= 1 (got " + std::to_string(o.batch) + ")");
  if (o.threads < 0) throw ConfigError("--threads must be >= 0 (got " + std::to_string(o.threads) + ")");
  if (!(o.budget_s > 0)) throw ConfigError("--budget-s must be > 0 seconds");
  if (o.max_allreduce_bytes < 4096) throw ConfigError("--max-bytes must be at least 4096");

  MpiSession mpi(nullptr, nullptr);
  auto comm = Communicator::world();
  std::ostringstream discard;
  std::ostream& log = comm->rank() == 0 ? std::cout : discard;
  const perf::ClusterSpec spec = perf::calibrate_machine(*comm, o, log);
  if (comm->rank() == 0) {
    const std::string out = vm["out"].as<std::string>();
    write_file_atomically(out, "# This machine, measured by `trainscale calibrate` (docs/model.md \"Calibration\").\n" +
                                   perf::cluster_yaml(spec));
    log << "wrote " << out << "\n";
  }
  return kExitOk;
}

}  // namespace ts
