// trainscale: the driver. Dispatches subcommands and is the only place that turns errors
// into exit codes (0 ok, 1 failed, 2 usage/config error, 3 diverged, 4 preempted).
#include <cstdio>
#include <iostream>
#include <string>
#include <vector>

#include "app/command_errors.h"
#include "app/commands.h"
#include "core/build_info.h"
#include "core/error.h"

namespace {

const char* kUsage = R"(usage: trainscale <command> [options]

commands:
  run       train one configuration and write its HDF5 run file
  show      print a run file: summary, per-phase times, per-rank table, config (--json, --csv)
  trace     a run file's per-rank phases as a Chrome trace (Perfetto, chrome://tracing)
  info      build options, backends, oneDNN version and ISA, MPI library, threads
  sweep     experiment campaigns: sweep expand, submit (slurm, pbs, local), status, resubmit
  bench     benchmarks: bench allreduce (mpi, ring, tree, ps, shm, butterfly), bench io (the input pipeline),
            bench checkpoint (checkpoint write and read per storage)
  predict   the analytical performance model of a run on a cluster file (docs/model.md)
  calibrate measure this machine into a cluster file (configs/clusters/local.yaml)
  data      data sets: data convert (records, hdf5, jpeg_dir), data inspect (checksums, corruption),
            data make-synthetic-jpeg (an ImageNet-shaped JPEG folder)

`trainscale <command> --help` describes each command; `trainscale --version` prints the version.
exit codes: 0 ok, 1 runtime failure, 2 usage or configuration error, 3 run diverged (NaN/Inf loss,
            or above diverge.loss_above_factor x its start),
            4 preempted (SIGTERM/SIGUSR1: checkpoint written, continue with `run --resume`)
)";

}  // namespace

int main(int argc, char** argv) {
  std::vector<std::string> args(argv + 1, argv + argc);
  if (args.empty() || args[0] == "--help" || args[0] == "-h" || args[0] == "help") {
    std::cout << kUsage;
    return args.empty() ? ts::kExitUsage : ts::kExitOk;
  }
  if (args[0] == "--version" || args[0] == "-V") {
    // The version, the commit it was built from and the MPI flavor: what a bug report needs.
    std::cout << "trainscale " << TRAINSCALE_VERSION << " (commit " << TRAINSCALE_GIT_SHA << ", "
              << TRAINSCALE_BUILD_TYPE << ", MPI " << TRAINSCALE_MPI_FLAVOR_BUILT << ")\n";
    return ts::kExitOk;
  }
  const std::string command = args[0];
  args.erase(args.begin());
  return ts::run_command_reporting_errors("trainscale", command, [&]() -> int {
    if (command == "run") return ts::command_run(args);
    if (command == "info") return ts::command_info(args);
    if (command == "sweep") return ts::command_sweep(args);
    if (command == "bench") return ts::command_bench(args);
    if (command == "predict") return ts::command_predict(args);
    if (command == "calibrate") return ts::command_calibrate(args);
    if (command == "data") return ts::command_data(args);
    if (command == "show") return ts::command_show(args);
    if (command == "trace") return ts::command_trace(args);
    std::cerr << "trainscale: unknown command '" << command << "'\n\n" << kUsage;
    return ts::kExitUsage;
  });
}
