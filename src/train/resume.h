// train-internal: resuming a run from its checkpoint (docs/reliability.md "Checkpoint and
// resume"): rank 0 reads the newest checkpoint that verifies, every rank gets its part back
// before set up (the training loader starts at the checkpoint's batch) and after it (parameters,
// momentum, BN statistics, RNG streams, loss scaler, strategy state, the recording so far), and
// the run continues bit for bit where the checkpoint stopped.
#pragma once

#include <cstdint>
#include <iosfwd>
#include <optional>

#include "dist/communicator.h"
#include "metrics/checkpoint_file.h"
#include "train/checkpoint.h"
#include "train/recording.h"
#include "train/run_setup.h"

namespace ts {

// Rank 0: the newest checkpoint of the run that reads back whole and verified, or nullopt.
// Each one skipped (truncated, damaged) gets a note in `log`. ConfigError for a checkpoint of
// another config or world size (it is never resumed from).
std::optional<Checkpoint> newest_valid_checkpoint(const CheckpointTarget& target, int world, std::ostream& log);

// What one rank needs to resume: its own part and the run's series (rank 0's).
struct ResumeState {
  bool resumed = false;
  int64_t step = 0;               // steps the checkpoint holds; the loader starts at this batch
  bool params_per_rank = false;
  RankCheckpoint mine;
  Checkpoint series;              // steps .. eval_accuracy (no parameters, no ranks)
};

// Collective, before set up: rank 0's `ckpt` (ignored elsewhere) split and sent to every rank.
ResumeState distribute_checkpoint(const std::optional<Checkpoint>& ckpt, Communicator& comm);
// Collective, after set up: puts the state back: parameters and momentum (shared ones
// broadcast from rank 0's `ckpt`), BN statistics, RNG streams, loss scaler, strategy state, and
// the recording so far into `rec`. RuntimeError when it does not fit the set-up model.
void apply_checkpoint(const ResumeState& state, const std::optional<Checkpoint>& ckpt, RunSetup& setup,
                      RunRecording& rec, Communicator& comm);

}  // namespace ts
