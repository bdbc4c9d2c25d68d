// train-internal: the "loop" phase of a run: train_step after train_step, each step's timings
// recorded by phase on this rank (no extra synchronisation), evaluations every eval_period
// steps and at the end (excluded from the training clock), progress lines on rank 0, and a
// stop on the first non-finite loss any rank sees. Between steps (train/step_boundary.h):
// checkpoints (train/checkpoint.h), and a stop when the ranks agree on a preemption signal.
#pragma once

#include <cstdint>
#include <iosfwd>

#include "dist/communicator.h"
#include "train/recording.h"
#include "train/step_boundary.h"

namespace ts {

struct CheckpointTarget;  // train/checkpoint.h
struct RunSetup;          // train/run_setup.h (which holds the LoopOptions)

// What the loop takes of the run's settings, packed once by the trainer (train/phase_options.h).
struct LoopOptions {
  int64_t log_every = 20;                // progress lines (and loss_reads: log's reads) every so many steps
  double diverge_loss_above_factor = 0;  // diverge.loss_above_factor (train/loss_watch.h); 0: unset
  double slowdown = 1.0;                 // dist.emulate_slowdown on this rank (TrainState::slowdown)
  int prefetch = 2;                      // dataset.prefetch: batches a loader holds at the old shares
  CheckpointSchedule checkpoints;
};

// Continues `rec` (empty, or a resumed run's recording: the loop starts at step
// rec.steps() + 1) up to the plan's last step, as setup.loop says. `checkpoints`: where they go, or null where
// this run cannot be checkpointed (a preemption then stops without one). A preemption ends the
// loop early with rec.preempted_by set (after the checkpoint of that step).
void run_loop(RunSetup& setup, Communicator& comm, std::ostream& log, RunRecording& rec,
              const CheckpointTarget* checkpoints);

}  // namespace ts
