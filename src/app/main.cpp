// trainscale: the driver. Dispatches subcommands and is the only place that turns errors
// into exit codes (0 ok, 1 failed, 2 usage/config error, 3 diverged, 4 preempted).
#include "app/command_errors.h"
#include "app/commands.h"
#include "core/build_info.h"

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
  // The version, the commit it was built from and the MPI flavor: what a bug report needs.
  const char* version = "trainscale " TRAINSCALE_VERSION " (commit " TRAINSCALE_GIT_SHA ", " TRAINSCALE_BUILD_TYPE
                        ", MPI " TRAINSCALE_MPI_FLAVOR_BUILT ")\n";
  return ts::run_driver("trainscale", kUsage, version,
                        {{"run", ts::command_run}, {"info", ts::command_info}, {"sweep", ts::command_sweep},
                         {"bench", ts::command_bench}, {"predict", ts::command_predict},
                         {"calibrate", ts::command_calibrate}, {"data", ts::command_data},
                         {"show", ts::command_show}, {"trace", ts::command_trace}},
                        argc, argv);
}
