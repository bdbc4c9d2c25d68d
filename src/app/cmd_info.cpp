// `trainscale info`: what this binary was built with and what it sees on this machine.
#include <omp.h>

#include <boost/program_options.hpp>

#include <iostream>
#include <memory>
#include <thread>

#include "app/command_options.h"
#include "app/commands.h"
#include "backend/backend.h"
#include "backend/backend_factory.h"
#include "core/build_info.h"
#include "core/error.h"
#include "core/strings.h"
#include "dist/communicator.h"

namespace po = boost::program_options;

namespace ts {

namespace {

// The precisions a backend computes conv and fc in on this machine ("fp32, bf16"): what a run's
// `precision` may be here (bf16_native says whether bf16 is native or emulated on AVX-512).
std::string precisions_of(const Backend& backend) {
  std::vector<std::string> out;
  for (Precision p : {Precision::fp32, Precision::tf32, Precision::fp16, Precision::bf16})
    if (backend.supports(Op::conv, p) && backend.supports(Op::fc, p)) out.push_back(precision_name(p));
  return join(out);
}

}  // namespace

int command_info(const std::vector<std::string>& args) {
  po::options_description opts("usage: trainscale info\n\nPrints build options, backends, oneDNN version and ISA,\n"
                               "the MPI library and thread counts as `key: value` lines.\n\noptions");
  opts.add_options()("help,h", "show this help");
  const std::optional<po::variables_map> parsed = parse_command_options(args, opts);
  if (!parsed) return kExitOk;
  MpiSession mpi(nullptr, nullptr);
  MpiLibrary lib = mpi_library();
  std::cout << "version: " << TRAINSCALE_VERSION << "\n"
            << "git_sha: " << TRAINSCALE_GIT_SHA << "\n"
            << "build_type: " << TRAINSCALE_BUILD_TYPE << "\n"
            << "cuda: " << TRAINSCALE_CUDA_ENABLED << "\n"
            << "backends: " << join(available_backends()) << "\n"
            ;
  // One block per backend of this build: the device it computes on (Backend::describe), or
  // why there is none on this machine (a built cuda backend without a GPU).
  for (const auto& name : available_backends()) {
    std::unique_ptr<Backend> backend;
    try {
      backend = make_backend(name);
    } catch (const NoDeviceError& e) {
      std::cout << "backend." << name << ".device: none\n"
                << "backend." << name << ".status: built; no " << (name == "cuda" ? "CUDA " : "") << "device found ("
                << e.reason << ")\n";
      continue;
    } catch (const std::exception& e) {  // a device that fails to start: info still reports the rest
      std::cout << "backend." << name << ".device: none\n"
                << "backend." << name << ".status: built; failed to start: " << e.what() << "\n";
      continue;
    }
    const DeviceDescription d = backend->describe();
    std::cout << "backend." << name << ".status: ok\n"
              << "backend." << name << ".device: " << d.device << "\n"
              << "backend." << name << ".device_name: " << d.name << "\n"
              << "backend." << name << ".isa: " << d.isa << "\n"
              << "backend." << name << ".generation: " << d.generation << "\n"
              << "backend." << name << ".memory_bytes: " << d.memory_bytes << "\n"
              << "backend." << name << ".compute_units: " << d.compute_units << "\n"
              << "backend." << name << ".precisions: " << precisions_of(*backend) << "\n"
              << "backend." << name << ".bf16_native: " << (d.bf16_native ? "yes" : "no") << "\n"
              << "backend." << name << ".host_accessible: " << (d.host_accessible ? "yes" : "no") << "\n"
              << "backend." << name << ".collectives: " << (d.collectives.empty() ? "none" : join(d.collectives)) << "\n";
    for (const auto& [library, version] : d.libraries)
      std::cout << "backend." << name << "." << library << "_version: " << version << "\n";
    if (name == "cpu") {  // kept for scripts that read the earlier keys
      std::cout << "onednn_isa: " << d.isa << "\n"
                << "bf16_native: " << (d.bf16_native ? "yes" : "no") << "\n";
      for (const auto& [library, version] : d.libraries)
        if (library == "onednn") std::cout << "onednn_version: " << version << "\n";
    }
  }
  std::cout
            << "mpi_flavor: " << lib.flavor << "\n"
            << "mpi_version: " << lib.version << "\n"
            << "mpi_flavor_built: " << TRAINSCALE_MPI_FLAVOR_BUILT << "\n"
            << "mpi_library: " << lib.full.substr(0, lib.full.find('\n')) << "\n"
            << "threads_default: " << omp_get_max_threads() << "\n"
            << "hardware_threads: " << std::thread::hardware_concurrency() << "\n";
  return kExitOk;
}

}  // namespace ts
