// Checkpoints and preemption between steps (see step_boundary.h).
#include "train/step_boundary.h"

#include <signal.h>

#include "core/preemption_signal.h"
#include "core/timer.h"

namespace ts {

StepBoundary::StepBoundary(const CheckpointSchedule& schedule) : schedule_(schedule), last_checkpoint_(now_seconds()) {}

void StepBoundary::checkpoint_written() { last_checkpoint_ = now_seconds(); }

BoundaryDecision StepBoundary::after_step(int64_t step, bool sync_point, Communicator& comm,
                                          MessageBoundary* by_messages) {
  BoundaryDecision d;
  // Step-based checkpoints fall on the same step everywhere: no agreement needed.
  d.checkpoint = schedule_.every_steps > 0 && step % schedule_.every_steps == 0;
  // async_ps agrees through its server even with one worker: the servers learn of a preemption
  // from the agreement, and stop with the workers.
  if (comm.size() > 1 && !sync_point && !by_messages) return d;
  const int signal = preemption_signal();
  const bool minutes_due =
      schedule_.every_minutes > 0 && now_seconds() - last_checkpoint_ >= schedule_.every_minutes * 60.0;
  if (by_messages) {  // async_ps: the request goes with the next push; server 0 names the step
    by_messages->request_boundary({signal, minutes_due});
    const BoundaryAgreement agreed = by_messages->agreed_boundary();
    if (agreed.step == step) {
      d.preempt_signal = agreed.signal;
      d.checkpoint = d.checkpoint || agreed.checkpoint;
    }
    return d;
  }
  // Per rank: got SIGUSR1, got another preemption signal (SIGTERM), its time-based checkpoint is due.
  double flags[3] = {signal == SIGUSR1 ? 1.0 : 0.0, signal != 0 && signal != SIGUSR1 ? 1.0 : 0.0,
                     minutes_due ? 1.0 : 0.0};
  if (comm.size() > 1) comm.allreduce_sum(flags, 3);
  if (flags[0] > 0) d.preempt_signal = SIGUSR1;
  else if (flags[1] > 0) d.preempt_signal = signal != 0 ? signal : SIGTERM;
  d.checkpoint = d.checkpoint || flags[2] > 0 || d.preempt_signal != 0;
  return d;
}

}  // namespace ts
