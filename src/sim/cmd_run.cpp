// `trainscale-sim run`: one run configuration on a simulated cluster (docs/model.md
// "Simulation"), written as a run file of the measured schema; or run I of a frozen campaign
// (--manifest DIR --index I), as `trainscale run --manifest` does, for `scheduler: simulate`.
#include <boost/program_options.hpp>

#include <filesystem>
#include <iostream>

#include "app/command_options.h"
#include "config/config_id.h"
#include "core/error.h"
#include "perfmodel/cluster.h"
#include "sim/commands.h"
#include "sim/manifest_run.h"
#include "sim/simulate_run.h"

namespace po = boost::program_options;

namespace ts::sim {

namespace {

const char* kRunUsage =
    "usage: trainscale-sim run --config RUN.yaml --cluster CLUSTER.yaml --workers N [--set key=value ...]\n"
    "                          [--out DIR] [--steps S] [--network-model M] [--coll-selector X]\n"
    "       trainscale-sim run --manifest CAMPAIGN_DIR --index I [--cluster CLUSTER.yaml ...]\n\n"
    "Simulates N workers of the run configuration (keys: docs/config.md) on the cluster file\n"
    "(configs/clusters/*.yaml, docs/model.md): the real gradient exchange of trainscale (bucket\n"
    "plan, overlap, all-reduce algorithms, strategies) runs over SimGrid's SMPI on a platform\n"
    "generated from the file, with compute replaced by the performance model's per-layer times.\n"
    "Writes <out>/<run_id>.h5 (schema trainscale-run/1, root attribute simulated = 1, /timing in\n"
    "simulated seconds); run_id = <config file stem>-<config_id>-sim-<cluster name>.\n"
    "The simulated MPI library: the config's mpi_flavor (openmpi, mpich, intel, mvapich2), else the\n"
    "cluster's mpi.allreduce, unless --coll-selector names an SMPI selector (ompi, mpich, impi,\n"
    "mvapich2, default). With --manifest: run I of a campaign whose site has `scheduler: simulate`\n"
    "(its `simulate:` entry gives the cluster and settings the flags do not).\n"
    "Exit codes: 0 ok, 1 runtime failure, 2 usage/config error.\n\noptions";

}  // namespace

int command_run(const std::vector<std::string>& args) {
  po::options_description opts(kRunUsage);
  opts.add_options()("help,h", "show this help")
      ("config", po::value<std::string>(), "run config YAML file")
      ("cluster", po::value<std::string>(), "cluster file (configs/clusters/*.yaml)")
      ("workers", po::value<int>(), "simulated workers (MPI ranks); default: the config's `workers`")
      ("set", po::value<std::vector<std::string>>()->composing(), "override a run-config key (repeatable)")
      ("cluster-set", po::value<std::vector<std::string>>()->composing(),
       "override a cluster-file key, e.g. interconnect.topology=mesh (repeatable)")
      ("out", po::value<std::string>()->default_value("runs"), "directory for the run file")
      ("steps", po::value<int64_t>(), "simulated training steps (default 3; every step is alike)")
      ("network-model", po::value<std::string>(), "SimGrid network model: CM02 (default), SMPI, LV08")
      ("coll-selector", po::value<std::string>(), "SMPI collective selector: ompi, mpich, impi, mvapich2, default")
      ("workers-per-node", po::value<int64_t>(), "the run's layout: ranks on each simulated node (0: fill each node's cores)")
      ("manifest", po::value<std::string>(), "campaign directory (scheduler: simulate)")
      ("index", po::value<int64_t>(), "manifest index");
  const std::optional<po::variables_map> parsed = parse_command_options(args, opts);
  if (!parsed) return kExitOk;
  const po::variables_map& vm = *parsed;
  SimFlags flags;
  if (vm.count("cluster")) flags.cluster = vm["cluster"].as<std::string>();
  flags.cluster_sets = option_strings(vm, "cluster-set");
  if (vm.count("steps")) flags.steps = vm["steps"].as<int64_t>();
  if (vm.count("network-model")) flags.network_model = vm["network-model"].as<std::string>();
  if (vm.count("coll-selector")) flags.coll_selector = vm["coll-selector"].as<std::string>();
  if (vm.count("workers-per-node")) flags.workers_per_node = vm["workers-per-node"].as<int64_t>();
  if (flags.workers_per_node < 0) throw ConfigError("--workers-per-node must be >= 0 (0: fill each node's cores)");
  if (vm.count("manifest") || vm.count("index")) {
    if (!vm.count("manifest") || !vm.count("index"))
      throw ConfigError("--manifest CAMPAIGN_DIR and --index I go together (see trainscale-sim run --help)");
    if (vm.count("config") || vm.count("set") || vm.count("workers"))
      throw ConfigError("--manifest runs take their config from the manifest; drop --config/--set/--workers");
    return run_manifest_entry(vm["manifest"].as<std::string>(), vm["index"].as<int64_t>(), flags);
  }
  if (!vm.count("config")) throw ConfigError("--config RUN.yaml is required (see trainscale-sim run --help)");
  if (flags.cluster.empty()) throw ConfigError("--cluster CLUSTER.yaml is required (see trainscale-sim run --help)");
  const std::string path = vm["config"].as<std::string>();
  std::vector<std::string> overrides = option_strings(vm, "set");
  if (vm.count("workers")) overrides.push_back("workers=" + std::to_string(vm["workers"].as<int>()));
  SimRunRequest q = request_of(flags, load_run_config(path, overrides));
  q.config_id = config_id_of(q.cfg.yaml);
  q.run_id = std::filesystem::path(path).stem().string() + "-" + q.config_id + "-sim-" + q.cluster.name;
  const std::filesystem::path out(vm["out"].as<std::string>());
  std::error_code ec;
  std::filesystem::create_directories(out, ec);
  q.run_path = (out / (q.run_id + ".h5")).string();
  simulate_run(q, std::cout);
  return kExitOk;
}

}  // namespace ts::sim
