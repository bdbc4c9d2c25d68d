// `trainscale bench io`: the input pipeline alone (train/input_bench.h), cold and warm page
// cache per repeat, written as an input benchmark file (metrics/io_bench_file.h).
#include <boost/program_options.hpp>

#include <iostream>

#include "app/command_options.h"
#include "app/commands.h"
#include "config/run_config.h"
#include "core/error.h"
#include "metrics/io_bench_file.h"
#include "train/input_bench.h"

namespace po = boost::program_options;

namespace ts {

int bench_io_command(const std::vector<std::string>& args) {
  po::options_description opts(
      "usage: trainscale bench io --config FILE.yaml [--set key=value ...] --out FILE.h5 [--repeats N] [--steps N]\n\n"
      "Runs only the training input pipeline of the config (dataset.format over dataset.storage,\n"
      "dataset.loader_threads worker threads, batch_per_worker samples per batch; no model) for\n"
      "--steps batches per pass. Each repeat makes two timed passes: page cache dropped (cold),\n"
      "then read once beforehand (warm), as dataset.cache does for a run. dataset.stage: node_local\n"
      "stages once, before the first pass. Writes samples/s and MB/s (bytes read from storage) per\n"
      "pass to FILE.h5 (/io/*, schema trainscale-io/1, docs/hdf5-schema.md), with the resolved config.\n"
      "One process, no MPI. Exit codes: 0 ok, 1 runtime failure (unreadable data), 2 usage/config.\n\noptions");
  InputBenchOptions options;
  opts.add_options()("help,h", "show this help")
      ("config", po::value<std::string>(), "run config YAML file (its dataset.* keys and batch)")
      ("set", po::value<std::vector<std::string>>()->composing(), "override a key: --set dataset.loader_threads=4 (repeatable)")
      ("out", po::value<std::string>(), "input benchmark file to write (.h5)")
      ("repeats", po::value<int>(&options.repeats)->default_value(3), "cold + warm pass pairs")
      ("steps", po::value<int64_t>(&options.batches)->default_value(50), "batches per timed pass");
  const std::optional<po::variables_map> parsed = parse_command_options(args, opts);
  if (!parsed) return kExitOk;
  const po::variables_map& vm = *parsed;
  if (!vm.count("config")) throw ConfigError("bench io: --config FILE.yaml is required (see trainscale bench io --help)");
  if (!vm.count("out")) throw ConfigError("bench io: --out FILE.h5 is required (see trainscale bench io --help)");
  const ResolvedConfig cfg = load_run_config(vm["config"].as<std::string>(), option_strings(vm, "set"));
  const IoBenchResult result = bench_input(cfg, options, std::cout);
  const std::string out = vm["out"].as<std::string>();
  write_io_bench_file(out, result);
  std::cout << "wrote " << out << "\n";
  return kExitOk;
}

}  // namespace ts
