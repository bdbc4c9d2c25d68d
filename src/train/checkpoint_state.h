// train-internal: one rank's part of a checkpoint (RankCheckpoint, metrics/checkpoint_file.h):
// taken from the running pieces of a run, put back into them, and its byte form for the trip
// between a rank and rank 0 (core/byte_stream.h).
#pragma once

#include <optional>
#include <string>
#include <tuple>

#include "core/byte_stream.h"
#include "metrics/checkpoint_file.h"
#include "train/recording.h"
#include "train/run_setup.h"

namespace ts {

// This rank's state after the steps in `rec`; parameters and momentum only `with_params`.
RankCheckpoint capture_rank_state(const RunRecording& rec, RunSetup& setup, bool with_params);
// Puts back BN statistics, RNG streams, loss scaler and strategy state, and parameters and
// momentum where `state` holds them; the run resumes after `steps_done` steps. RuntimeError when
// a length does not fit the set-up model.
void restore_rank_state(const RankCheckpoint& state, RunSetup& setup, int64_t steps_done);
// The shares of the global batch a checkpointed run of `world` ranks had (set_up_run takes them
// before its loaders start); nullopt when it had equal shares.
std::optional<ShareState> share_state_of(const RankCheckpoint& state, int world);
// The recording so far: rank 0's series from `series`, this rank's losses and timings.
void restore_recording(const Checkpoint& series, const RankCheckpoint& state, RunRecording& rec);

// A checkpoint's series in recording_series's order (train/recording.h).
template <typename C>
auto checkpoint_series(C& c) {
  return std::tie(c.steps, c.samples, c.epoch, c.time, c.lr, c.eval_step, c.eval_epoch, c.eval_time, c.eval_loss,
                  c.eval_accuracy);
}

void pack_rank_state(ByteWriter& out, const RankCheckpoint& state);
RankCheckpoint unpack_rank_state(ByteReader& in);
// The run's series of a checkpoint (steps .. eval_accuracy) and its step.
void pack_series(ByteWriter& out, const Checkpoint& ckpt);
void unpack_series(ByteReader& in, Checkpoint& ckpt);

}  // namespace ts
