// train-internal: a run's checkpoints (docs/reliability.md "Checkpoint and resume"). Between
// two steps every rank hands what it holds (parameters and momentum where the ranks differ,
// BN statistics, RNG streams, loader position, loss scaler, strategy state, its timings and
// losses so far) to rank 0, one rank at a time, which writes one file atomically
// (metrics/checkpoint_file.h):
//   <out>/<run_id>.checkpoint.<step>.hdf5
// and, where the ranks' models differ, each rank's model first to a part beside it:
//   <out>/<run_id>.checkpoint.<step>.rank-<rank>.hdf5
// (.hdf5, not .h5: whatever collects run files as *.h5 never takes a checkpoint for a run).
// A resumed run continues from one (train/resume.h).
#pragma once

#include <cstdint>
#include <string>
#include <utility>
#include <vector>

#include "dist/communicator.h"
#include "metrics/checkpoint_file.h"
#include "train/recording.h"
#include "train/run_setup.h"

namespace ts {

// Where a run's checkpoints go and what they are stamped with.
struct CheckpointTarget {
  std::string out_dir, run_id, config_id;
  int attempt = 1;
};

// "<out_dir>/<run_id>.checkpoint.<step>.hdf5".
std::string checkpoint_path(const std::string& out_dir, const std::string& run_id, int64_t step);
// This run's checkpoints in `out_dir` as (step, path), the newest (highest step) first.
std::vector<std::pair<int64_t, std::string>> list_checkpoints(const std::string& out_dir, const std::string& run_id);

// Collective, between steps: every rank's state after `step` steps, written by rank 0. Keeps
// this run's newest two checkpoints at or below `step` and removes the others (older ones, and
// ones ahead of `step` that an attempt which did not resume left). Returns the path on rank 0
// ("" elsewhere); counts the checkpoint and its seconds in `rec`.
std::string save_checkpoint(const CheckpointTarget& target, int64_t step, RunRecording& rec, RunSetup& setup,
                            Communicator& comm);

// Rank 0, once the run file is written: removes the run's checkpoints, their rank parts and
// the temporary files of checkpoint writes that were killed.
void remove_checkpoints(const std::string& out_dir, const std::string& run_id);

}  // namespace ts
