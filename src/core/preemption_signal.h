// The signals a scheduler sends before it takes a job's nodes away: SIGTERM (Slurm's and PBS's
// warning before SIGKILL) and SIGUSR1 (Slurm's `--signal=B:USR1@60`, a chosen time before the
// walltime ends). Only which signal came is recorded (one lock-free atomic store); the trainer
// looks at the record between two steps, where every rank can stop at the same step with a
// checkpoint (docs/reliability.md "Preemption").
//
// The record is process-wide state, the one exception to "no globals": a signal handler has no
// other place to leave it.
#pragma once

#include <string>

namespace ts {

// Starts recording SIGTERM and SIGUSR1: blocks them in the calling thread (and so in every
// thread it starts afterwards, compute threads included: a signal never interrupts a kernel),
// starts a watcher thread that takes them with sigwait, and installs a recording handler for
// the threads started before (the MPI library's progress threads); a handler that was there
// before (an MPI library's) is called after ours, the default action (terminate) is not.
// A second preemption signal ends the process at once (by SIGTERM), as without this handling:
// the first asks for a checkpoint at the next step boundary, the second for the process to go.
// Processes started afterwards inherit the blocked signals (none are). Idempotent.
// `trainscale run` calls it once MPI is up.
void install_preemption_handlers();
// The signal that arrived since the handlers were installed (the latest one), or 0.
int preemption_signal();
// "SIGTERM", "SIGUSR1", or "signal N".
std::string signal_name(int signal);

}  // namespace ts
