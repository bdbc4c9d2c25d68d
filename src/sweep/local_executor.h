// The local executor (`sweep submit --scheduler local`, docs/sweeps.md "Locally"): runs a
// campaign's tasks on this machine K at a time, each as `<launcher> ... run --manifest DIR
// --index I` started in a session of its own, with one progress line per finished task.
//
// Interrupts (SIGINT/Ctrl-C, SIGTERM, SIGHUP, SIGUSR1; docs/reliability.md "Campaign state"):
// no new task starts; every running launcher gets SIGUSR1, which mpirun / srun / mpiexec
// forward to the ranks (the trainer writes a checkpoint and ends preempted); what is still
// alive after the site's signal_seconds (60 s by default) or a second interrupt is killed,
// every process of the task's session (ranks that lost their mpirun included). Each stopped
// task ends PREEMPTED when the trainer wrote that marker, else FAILED "interrupted".
// Whatever a launcher leaves behind in its session when it ends is killed too, so no rank
// outlives its task.
#pragma once

#include <cstdint>
#include <iosfwd>
#include <string>
#include <vector>

#include "sweep/campaign.h"

namespace ts {

struct LocalRunSummary {
  int64_t finished = 0;     // tasks that ended (any outcome), skipped ones included
  int64_t failed = 0;       // ended failed (interrupted ones included)
  int64_t preempted = 0;    // ended preempted (a checkpoint to resume from)
  int64_t skipped = 0;      // done, or running elsewhere (a live attempt or its lock held)
  int64_t unsupported = 0;  // what this build or machine cannot run (UNSUPPORTED marker)
  int64_t not_started = 0;  // queued tasks an interrupt kept from starting
  int interrupted_by = 0;   // the signal that interrupted the executor; 0 when none did
};

// Runs `indices` (launch commands checked first: ConfigError when the binary or launcher is
// missing), `throttle` at a time, printing "[k/N] index I RUN_ID (KEY=VALUE ...): OUTCOME |
// failures F | elapsed E | ETA T" per finished task on `progress` (the swept keys' values,
// run_label). Each run's launcher gets OMP_NUM_THREADS = the run's threads.
LocalRunSummary run_local(const Campaign& campaign, const std::vector<int64_t>& indices, int throttle,
                          std::ostream& progress);

// Simulated campaigns (docs/sweeps.md "Simulated campaigns"): a site with `scheduler: simulate`
// runs every run of a campaign through trainscale-sim on this machine, on the simulated cluster
// its `simulate:` entry names; the local executor starts them. The command that simulates run
// `index` of `campaign`:
// trainscale-sim run --manifest DIR --index I --cluster ABS [--cluster-set ...] --steps S ...
// ConfigError when the simulator or the cluster file is not there.
std::vector<std::string> simulate_command(const Campaign& campaign, int64_t index);

}  // namespace ts
