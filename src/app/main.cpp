// trainscale: the driver. Dispatches subcommands and is the only place that turns errors
// into exit codes (0 ok, 1 failed, 2 usage/config error, 3 diverged, 4 preempted).
#include <boost/program_options/errors.hpp>

#include <cstdio>
#include <iostream>
#include <new>
#include <system_error>
#include <string>
#include <vector>

#include "app/commands.h"
#include "core/error.h"

namespace {

const char* kUsage = R"(usage: trainscale <command> [options]

commands:
  run       train one configuration and write its HDF5 run file
  info      build options, backends, oneDNN version and ISA, MPI library, threads
  sweep     experiment campaigns: sweep expand, submit (slurm, pbs, local), status, resubmit
  bench     benchmarks: bench allreduce (mpi, ring, tree, ps, shm), bench io (the input pipeline)
  predict   the analytical performance model of a run on a cluster file (docs/model.md)
  calibrate measure this machine into a cluster file (configs/clusters/local.yaml)

`trainscale <command> --help` describes each command.
exit codes: 0 ok, 1 runtime failure, 2 usage or configuration error, 3 run diverged (NaN/Inf loss),
            4 preempted (SIGTERM/SIGUSR1: checkpoint written, continue with `run --resume`)
)";

}  // namespace

std::string ts::unexpected_error_text(const std::exception& e) {
  if (dynamic_cast<const std::bad_alloc*>(&e) || dynamic_cast<const std::length_error*>(&e))
    return std::string("out of memory: an allocation failed (") + e.what() +
           "); the run needs more memory than this process may use: lower batch_per_worker, eval.batch or "
           "dataset.prefetch, or run a smaller model (docs/reliability.md \"Memory\")";
  if (dynamic_cast<const std::system_error*>(&e))
    return std::string("the system refused a resource: ") + e.what() +
           " (a thread or process limit? lower threads or dataset.loader_threads, or check ulimit -u)";
  return std::string("internal error: ") + e.what();
}

int main(int argc, char** argv) {
  std::vector<std::string> args(argv + 1, argv + argc);
  if (args.empty() || args[0] == "--help" || args[0] == "-h" || args[0] == "help") {
    std::cout << kUsage;
    return args.empty() ? ts::kExitUsage : ts::kExitOk;
  }
  const std::string command = args[0];
  args.erase(args.begin());
  try {
    if (command == "run") return ts::command_run(args);
    if (command == "info") return ts::command_info(args);
    if (command == "sweep") return ts::command_sweep(args);
    if (command == "bench") return ts::command_bench(args);
    if (command == "predict") return ts::command_predict(args);
    if (command == "calibrate") return ts::command_calibrate(args);
    std::cerr << "trainscale: unknown command '" << command << "'\n\n" << kUsage;
    return ts::kExitUsage;
  } catch (const ts::ConfigError& e) {
    std::cerr << "trainscale " << command << ": configuration error: " << e.what() << "\n";
    return ts::kExitUsage;
  } catch (const boost::program_options::error& e) {
    std::cerr << "trainscale " << command << ": usage error: " << e.what() << " (see trainscale " << command
              << " --help)\n";
    return ts::kExitUsage;
  } catch (const ts::PreemptedError& e) {
    std::cerr << "trainscale " << command << ": preempted: " << e.what() << "\n";
    return ts::kExitPreempted;
  } catch (const ts::RuntimeError& e) {
    std::cerr << "trainscale " << command << ": error: " << e.what() << "\n";
    return ts::kExitFailed;
  } catch (const std::exception& e) {
    std::cerr << "trainscale " << command << ": " << ts::unexpected_error_text(e) << "\n";
    return ts::kExitFailed;
  }
}
