// train-internal: the "loop" phase of a run: train_step after train_step, each step's timings
// recorded by phase on this rank (no extra synchronisation), evaluations every eval_period
// steps and at the end (excluded from the training clock), progress lines on rank 0, and a
// stop on the first non-finite loss any rank sees. Between steps (train/step_boundary.h):
// checkpoints (train/checkpoint.h), and a stop when the ranks agree on a preemption signal.
#pragma once

#include <iosfwd>

#include "config/run_config.h"
#include "dist/communicator.h"
#include "train/checkpoint.h"
#include "train/recording.h"
#include "train/run_setup.h"

namespace ts {

// Continues `rec` (empty, or a resumed run's recording: the loop starts at step
// rec.steps() + 1) up to the plan's last step. `checkpoints`: where they go, or null where
// this run cannot be checkpointed (a preemption then stops without one). A preemption ends the
// loop early with rec.preempted_by set (after the checkpoint of that step).
void run_loop(const RunConfig& run, RunSetup& setup, Communicator& comm, std::ostream& log, RunRecording& rec,
              const CheckpointTarget* checkpoints);

}  // namespace ts
