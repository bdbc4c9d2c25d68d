// trainscale-sim: the gradient exchange of trainscale on simulated clusters (SimGrid SMPI,
// docs/model.md "Simulation"). Dispatches subcommands and is the only place of this executable
// that turns errors into exit codes (0 ok, 1 failed, 2 usage/config error), through app/command_errors.h as trainscale does.
#include "app/command_errors.h"
#include "sim/commands.h"

namespace {

const char* kUsage = R"(usage: trainscale-sim <command> [options]

commands:
  run       simulate one run configuration on a cluster file and write its HDF5 run file
            (the schema of trainscale run, root attribute simulated = 1, simulated seconds)
  bench     bench allreduce: one all-reduce algorithm on a simulated cluster, against its
            alpha-beta-gamma formula

`trainscale-sim <command> --help` describes each command.
exit codes: 0 ok, 1 runtime failure, 2 usage or configuration error
)";

}  // namespace

int main(int argc, char** argv) {
  return ts::run_driver("trainscale-sim", kUsage, "", {{"run", ts::sim::command_run}, {"bench", ts::sim::command_bench}},
                        argc, argv);
}
