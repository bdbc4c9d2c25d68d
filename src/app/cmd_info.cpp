// `trainscale info`: what this binary was built with and what it sees on this machine.
#include <omp.h>

#include <boost/program_options.hpp>

#include <iostream>
#include <thread>

#include "app/commands.h"
#include "backend/backend.h"
#include "backend/cpu/cpu_info.h"
#include "core/build_info.h"
#include "core/error.h"
#include "dist/communicator.h"

namespace po = boost::program_options;

namespace ts {

int command_info(const std::vector<std::string>& args) {
  po::options_description opts("usage: trainscale info\n\nPrints build options, backends, oneDNN version and ISA,\n"
                               "the MPI library and thread counts as `key: value` lines.\n\noptions");
  opts.add_options()("help,h", "show this help");
  po::variables_map vm;
  po::store(po::command_line_parser(args).options(opts).run(), vm);
  if (vm.count("help")) {
    std::cout << opts << "\n";
    return kExitOk;
  }
  int argc = 0;
  char** argv = nullptr;
  MpiSession mpi(&argc, &argv);
  MpiLibrary lib = mpi_library();
  std::string backends;
  for (const auto& b : available_backends()) backends += (backends.empty() ? "" : ", ") + b;
  std::cout << "version: " << TRAINSCALE_VERSION << "\n"
            << "git_sha: " << TRAINSCALE_GIT_SHA << "\n"
            << "build_type: " << TRAINSCALE_BUILD_TYPE << "\n"
            << "cuda: " << TRAINSCALE_CUDA_ENABLED << "\n"
            << "backends: " << backends << "\n"
            << "onednn_version: " << onednn_version() << "\n"
            << "onednn_isa: " << onednn_isa() << "\n"
            << "bf16_native: " << (onednn_bf16_native() ? "yes" : "no") << "\n"
            << "mpi_flavor: " << lib.flavor << "\n"
            << "mpi_version: " << lib.version << "\n"
            << "mpi_flavor_built: " << TRAINSCALE_MPI_FLAVOR_BUILT << "\n"
            << "mpi_library: " << lib.full.substr(0, lib.full.find('\n')) << "\n"
            << "threads_default: " << omp_get_max_threads() << "\n"
            << "hardware_threads: " << std::thread::hardware_concurrency() << "\n";
  return kExitOk;
}

int command_not_built(const std::string& name, const std::vector<std::string>& args) {
  throw ConfigError("`trainscale " + name + "` is part of the CLI contract (DESIGN.md) but not in this build yet; "
                    "available commands: run, info");
}

}  // namespace ts
