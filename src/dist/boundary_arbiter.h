// How the workers of async_ps, which never wait for each other between steps, still act at one
// step on a preemption or a time-based checkpoint (train/step_boundary.h; docs/async.md).
// A worker's request rides on its next push; server 0 fixes the
// step at which every worker acts: one past the newest step any worker has pushed, so no worker
// has passed it yet, and every reply carries that agreement until every worker has pushed the
// step after it (each has then had its reply for the agreed step). Pure bookkeeping, no MPI:
// dist/async_ps_server.h drives it.
#pragma once

#include <cstdint>

namespace ts {

// What one worker asks for after a step: the preemption signal it got (0: none), and whether
// its time-based checkpoint is due.
struct BoundaryRequest {
  int signal = 0;
  bool checkpoint = false;
  bool any() const { return signal != 0 || checkpoint; }
};

// What every worker does after step `step` (0: nothing agreed): a checkpoint, and with a signal
// the stop of a preemption after it.
struct BoundaryAgreement {
  int64_t step = 0;
  int signal = 0;
  bool checkpoint = false;
};

class BoundaryArbiter {
 public:
  // A push carrying `request` arrived; `newest`: the most steps any worker has pushed, this push
  // included. An agreement in force is kept as it is (a worker may have acted on it already);
  // a request it does not cover is made again with the worker's next push.
  void on_request(const BoundaryRequest& request, int64_t newest);
  // The agreement replies carry; `round`: the fewest steps pushed by a worker still training.
  // Once round passes the agreed step, the agreement is over and the next request fixes another.
  BoundaryAgreement current(int64_t round);

 private:
  BoundaryAgreement agreed_;
};

}  // namespace ts
