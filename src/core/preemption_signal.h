// The signals a scheduler sends before it takes a job's nodes away: SIGTERM (Slurm's and PBS's
// warning before SIGKILL) and SIGUSR1 (Slurm's `--signal=B:USR1@60`, a chosen time before the
// walltime ends). The handler only records which signal came (async-signal-safe: one lock-free
// atomic store); the trainer looks at the record between two steps, where every rank can stop
// at the same step with a checkpoint (docs/reliability.md "Preemption").
//
// The record is process-wide state, the one exception to "no globals": a signal handler has no
// other place to leave it.
#pragma once

#include <string>

namespace ts {

// Installs the handler for SIGTERM and SIGUSR1 (SA_RESTART: interrupted system calls resume).
// Idempotent. `trainscale run` calls it once MPI is up (after the MPI library's own handlers).
void install_preemption_handlers();
// The signal that arrived since the handlers were installed (the latest one), or 0.
int preemption_signal();
// "SIGTERM", "SIGUSR1", or "signal N".
std::string signal_name(int signal);
// Forgets a recorded signal (tests).
void clear_preemption_signal();

}  // namespace ts
