// The signals a scheduler sends before it takes a job's nodes away: SIGTERM (Slurm's and PBS's
// warning before SIGKILL) and SIGUSR1 (Slurm's `--signal=B:USR1@60`, a chosen time before the
// walltime ends). Only which signal came is recorded (one lock-free atomic store); the trainer
// looks at the record between two steps, where every rank can stop at the same step with a
// checkpoint (docs/reliability.md "Preemption").
//
// The record is process-wide state, the one exception to "no globals": a signal handler has no
// other place to leave it.
#pragma once

#include <functional>
#include <string>

#include "core/error.h"

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
// Calls `notice(signal)` once, on the watcher thread, within 0.1 s of the first preemption
// signal (at once if one came before): what must be on disk even if the launcher kills the
// process before the next step boundary (train/preemption_notice.h). An empty function clears
// it, waiting for a call in progress.
void on_preemption_signal(std::function<void(int)> notice);
// "SIGTERM", "SIGUSR1", "SIGINT", "SIGHUP", "SIGKILL", or "signal N".
std::string signal_name(int signal);

// Start-up (everything before the first step: listing the data root, the page-cache pass,
// staging, opening the data, planning) has no step boundary to stop at, and a scheduler that
// sends SIGTERM expects the process gone within its grace period: its long loops call
// stop_if_signalled_during_startup between items, which throws StoppedDuringStartup once a
// signal was recorded. Only while the start-up phase is open (from install_preemption_handlers
// to end_startup_phase, called before the first step): a loop that also runs later (or in
// another command) never stops there. train() turns it into exit 4 or 1 (train/startup_stop.h).
class StoppedDuringStartup : public RuntimeError {
 public:
  StoppedDuringStartup(int signal, const std::string& where);
  int signal() const { return signal_; }

 private:
  int signal_;
};
bool startup_stop_requested();
[[noreturn]] void throw_stopped_during_startup(const std::string& where);
// `where()` says what the loop was doing ("copying 1200 of 50000 files to ..."); it is only
// called when the loop stops.
template <class Where>
void stop_if_signalled_during_startup(const Where& where) {
  if (startup_stop_requested()) throw_stopped_during_startup(where());
}
// The first step starts: from here on signals are taken at step boundaries.
void end_startup_phase();

}  // namespace ts
