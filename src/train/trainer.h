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
};

struct RunOutcome {
  int exit_code = 0;      // kExitOk or kExitDiverged
  std::string run_file;   // path of the written HDF5 file (rank 0; "" elsewhere)
};

// Trains per `config`. Rank 0 prints progress to `log` and writes <out_dir>/<run_id>.h5
// atomically. Throws ConfigError for what the config asks but this build, world or device
// cannot do (train/capabilities.h), RuntimeError for failures; on a runtime failure rank 0
// leaves a <run_id>.FAILED marker (core/run_marker.h) with the reason (no .h5 is written, so a
// run file on disk is always complete), then rethrows.
RunOutcome train(const ResolvedConfig& config, const RunIdentity& id, const std::string& out_dir,
                 Communicator& comm, std::ostream& log);

}  // namespace ts
