// `trainscale run`: one configuration, one HDF5 run file.
#include <boost/program_options.hpp>

#include <filesystem>
#include <iostream>
#include <sstream>

#include "app/commands.h"
#include "core/error.h"
#include "dist/communicator.h"
#include "sweep/config_id.h"
#include "sweep/run_config.h"
#include "train/trainer.h"

namespace po = boost::program_options;

namespace ts {

int command_run(const std::vector<std::string>& args) {
  po::options_description opts(
      "usage: trainscale run --config FILE.yaml [--set key=value ...] [--out DIR]\n"
      "       trainscale run --manifest CAMPAIGN_DIR --index I     (sweep campaigns; not in this build yet)\n\n"
      "Trains one run configuration (keys: docs/config.md) and writes <out>/<run_id>.h5 (schema\n"
      "trainscale-run/1, docs/hdf5-schema.md); run_id = <config file stem>-<config_id>.\n"
      "Under MPI (mpirun -np N trainscale run ...) N must equal the config's `workers`.\n"
      "Exit codes: 0 ok, 1 runtime failure, 2 usage/config error, 3 diverged (NaN/Inf loss).\n\noptions");
  opts.add_options()("help,h", "show this help")
      ("config", po::value<std::string>(), "run config YAML file")
      ("set", po::value<std::vector<std::string>>()->composing(), "override a key: --set dist.allreduce=mpi (repeatable)")
      ("out", po::value<std::string>()->default_value("runs"), "directory for the run file")
      ("manifest", po::value<std::string>(), "campaign directory (sweep runs)")
      ("index", po::value<int64_t>(), "manifest index (sweep runs)");
  po::variables_map vm;
  po::store(po::command_line_parser(args).options(opts).run(), vm);
  po::notify(vm);
  if (vm.count("help")) {
    std::cout << opts << "\n";
    return kExitOk;
  }
  if (vm.count("manifest") || vm.count("index"))
    throw ConfigError("--manifest/--index: campaign runs come with `trainscale sweep`, which is not in this build yet; use --config FILE.yaml");
  if (!vm.count("config")) throw ConfigError("--config FILE.yaml is required (see trainscale run --help)");
  const std::string path = vm["config"].as<std::string>();
  std::vector<std::string> overrides;
  if (vm.count("set")) overrides = vm["set"].as<std::vector<std::string>>();

  // Parse before MPI starts: a config error costs no MPI start-up and is reported once.
  ResolvedConfig cfg = load_run_config(path, overrides);
  RunIdentity id;
  id.config_id = config_id_of(cfg.yaml);
  id.run_id = std::filesystem::path(path).stem().string() + "-" + id.config_id;

  int argc = 0;
  char** argv = nullptr;
  MpiSession mpi(&argc, &argv);
  auto comm = Communicator::world();
  try {
    std::ostringstream discard;
    RunOutcome out = train(cfg, id, vm["out"].as<std::string>(), *comm, comm->rank() == 0 ? std::cout : discard);
    return out.exit_code;
  } catch (const std::exception& e) {
    if (comm->size() > 1 && dynamic_cast<const ConfigError*>(&e) == nullptr) {
      // Other ranks may wait in a collective: report and take the whole job down.
      std::cerr << "trainscale run: rank " << comm->rank() << " on " << comm->host() << ": " << e.what() << "\n";
      std::cerr.flush();
      comm->abort_all(kExitFailed);
    }
    if (comm->rank() != 0) return dynamic_cast<const ConfigError*>(&e) ? kExitUsage : kExitFailed;
    throw;
  }
}

}  // namespace ts
