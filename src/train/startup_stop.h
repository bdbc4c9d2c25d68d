// A preemption signal that stopped a run's start-up (core/preemption_signal.h,
// StoppedDuringStartup: before the first step, in the data-root listing, the page-cache pass,
// staging, opening the data or planning). Exit 4 means "resume me", so it is given only where
// there is something to resume: a checkpoint of the run in its output directory (an earlier
// attempt's); else the run failed (exit 1) and starts again from step 0. Either way the message
// says it was stopped during start-up and where (docs/reliability.md "Preemption").
#pragma once

#include <string>

#include "core/error.h"
#include "core/preemption_signal.h"
#include "dist/communicator.h"

namespace ts {

// Exit 4 of a start-up stop. The other ranks may still wait in a collective for the rank that
// stopped, so under MPI the caller ends the job with MPI_Abort(4) once its own records are
// written (app/cmd_run.cpp), where a stop at a step boundary lets every rank exit by itself.
class StartupPreemptedError : public PreemptedError {
 public:
  using PreemptedError::PreemptedError;
};

// With a checkpoint of `run_id` in `out_dir`: writes the PREEMPTED marker naming it (any rank
// that stopped; the marker is written atomically) and throws StartupPreemptedError. Without
// one: throws RuntimeError (the caller writes the FAILED marker, and under MPI ends the job with
// exit 1 as for any runtime error).
[[noreturn]] void end_stopped_startup(const StoppedDuringStartup& stop, const std::string& out_dir,
                                      const std::string& run_id, Communicator& comm);

}  // namespace ts
