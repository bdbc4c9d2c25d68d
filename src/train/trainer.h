// One training run: set up (backend, data, model, optimizer, exchange strategy), the timed loop
// (train/train_step.h, step after step), gather (rank 0 collects every rank's timings), write
// (the run file). Used by `trainscale run` (app/) for --config and --manifest runs.
#pragma once

#include <iosfwd>
#include <string>

#include "config/run_config.h"
#include "dist/communicator.h"

namespace ts {

struct RunIdentity {
  std::string run_id;     // file stem of the run file: <out_dir>/<run_id>.h5
  std::string config_id;  // hash of the canonical resolved config
  std::string campaign;   // campaign name ("" for single runs)
  // Which attempt at the run this is (the run file's `attempt`): the campaign's count for
  // manifest runs; 0 lets the trainer decide: SLURM_RESTART_COUNT + 1 under Slurm, else the
  // resumed checkpoint's attempt + 1, else 1.
  int attempt = 0;
};

// Whether a run continues from its newest valid checkpoint in the output directory:
//   off        start at step 0 (a note names the checkpoints that exist);
//   requested  `--resume`: continue, or start at step 0 with a note when there is none;
//   automatic  the manifest task runner: continue when there is one, silently otherwise.
enum class ResumeMode { off, requested, automatic };

struct RunOutcome {
  int exit_code = 0;      // kExitOk or kExitDiverged
  std::string run_file;   // path of the written HDF5 file (rank 0; "" elsewhere)
};

// Trains per `config`. Rank 0 prints progress to `log` and writes <out_dir>/<run_id>.h5
// atomically. Throws ConfigError for what the config asks but this build, world or device
// cannot do (train/capabilities.h), RuntimeError for failures; on a runtime failure rank 0
// leaves a <run_id>.FAILED marker (core/run_marker.h) with the reason (no .h5 is written, so a
// run file on disk is always complete), then rethrows. Checkpoints (checkpoint.*) go to
// <out_dir>/<run_id>.checkpoint.<step>.hdf5 and are removed once the run file is written
// (unless checkpoint.keep). A SIGTERM / SIGUSR1 (core/preemption_signal.h) stops every rank at
// the same step with a checkpoint and a <run_id>.PREEMPTED marker: PreemptedError.
RunOutcome train(const ResolvedConfig& config, const RunIdentity& id, const std::string& out_dir,
                 Communicator& comm, std::ostream& log, ResumeMode resume = ResumeMode::off);

}  // namespace ts
