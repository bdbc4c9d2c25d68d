// train-internal: what happens between two steps besides evaluation: a checkpoint that is due
// (every checkpoint.every_steps steps, or checkpoint.every_minutes since the last one) and a
// preemption (SIGTERM / SIGUSR1 recorded by core/preemption_signal.h). A signal reaches one
// rank or all of them at different moments, and a rank's clock is its own, so the ranks agree
// before they act: at a sync point each rank contributes its flags to one small all-reduce
// (three doubles), and every rank then takes the same decision at the same step.
// Sync points are the steps where the ranks synchronise anyway (sync and the parameter
// server: every step; weight_avg: the steps that average), so the agreement adds no waiting
// of its own; it runs outside the timed step. One rank alone decides every step, locally.
// async_ps has no sync point between steps (its workers never wait for each other): there
// each rank's flags ride on its next push, and server 0 names the step at which every worker
// acts (dist/message_boundary.h, dist/boundary_arbiter.h).
#pragma once

#include <cstdint>

#include "dist/communicator.h"
#include "dist/message_boundary.h"

namespace ts {

// When checkpoints fall due (checkpoint.every_steps, checkpoint.every_minutes; 0: not by that
// measure). Built once by set_up_run.
struct CheckpointSchedule {
  int64_t every_steps = 0;
  double every_minutes = 0;
};

struct BoundaryDecision {
  bool checkpoint = false;  // write one now (every rank)
  int preempt_signal = 0;   // stop after the checkpoint: the signal (SIGUSR1 if any rank got it, else SIGTERM)
};

class StepBoundary {
 public:
  explicit StepBoundary(const CheckpointSchedule& schedule);
  // After step `step` (never the last one: a run that is about to finish just finishes).
  // Collective when the world has several ranks and `sync_point` holds, unless the exchange
  // agrees by messages (`by_messages` not null: then on whatever number of ranks).
  BoundaryDecision after_step(int64_t step, bool sync_point, Communicator& comm, MessageBoundary* by_messages);
  // A checkpoint was written: the minutes count from now.
  void checkpoint_written();

 private:
  CheckpointSchedule schedule_;
  double last_checkpoint_ = 0;  // now_seconds() of the start or of the last checkpoint
};

}  // namespace ts
