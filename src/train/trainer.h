// One training run: data, net, optimizer, gradient exchange, evaluation, metrics, run file.
// Used by `trainscale run` (app/) for --config and --manifest runs.
#pragma once

#include <iosfwd>
#include <string>

#include "dist/communicator.h"
#include "sweep/run_config.h"

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

// Checks everything this build and this MPI world can or cannot honour (world size vs
// `workers`, backend, precision, gpu, mpi_flavor, dist settings, storage). Throws ConfigError
// naming the key, its source and what is accepted.
void check_run_capabilities(const ResolvedConfig& config, int world_size);

// Trains per `config`. Rank 0 prints progress to `log` and writes <out_dir>/<run_id>.h5
// atomically. Throws ConfigError for what the config asks but cannot be done, RuntimeError for
// failures; on a runtime failure rank 0 leaves a <run_id>.FAILED text marker with the reason
// (no .h5 is written, so a run file on disk is always complete), then rethrows.
RunOutcome train(const ResolvedConfig& config, const RunIdentity& id, const std::string& out_dir,
                 Communicator& comm, std::ostream& log);

}  // namespace ts
