// dist-internal: the messages of async_ps between workers and servers (point to point on the
// world communicator, its own tags). Each message is a small header of doubles followed, where
// it carries one, by a shard of floats:
//   plan     rank 0 -> server: [param_count, total_steps, global_batch, steps_per_epoch], then
//            the shard's initial weights;
//   push     worker -> server: [kind, clock, final, loss, signal, checkpoint], then (kind push)
//            the gradient shard. Kinds: push; leave (the worker is done; `signal`: it stopped
//            for a preemption); snapshot (rank 0, at a checkpoint: send me the shard's weights
//            and momentum); restore (rank 0, resuming: `clock` steps are done, the shard's
//            weights and momentum follow, answered by an empty ack). `signal` and `checkpoint`
//            of a push are the worker's boundary request (dist/boundary_arbiter.h);
//   reply    server -> worker: [staleness, held_s, nonfinite, agreed_step, agreed_signal,
//            agreed_checkpoint], then the shard's fresh weights. The agreement is server 0's.
// Non-blocking on both sides (MPI_Isend / MPI_Irecv), so no send waits for a receive that waits
// for another send.
#pragma once

#include <mpi.h>

namespace ts {

constexpr int kTagPsPlan = 201, kTagPsPlanData = 202, kTagPsPush = 203, kTagPsPushData = 204, kTagPsReply = 205,
              kTagPsReplyData = 206, kTagPsModelData = 207;

enum class PsMessage { push = 0, leave = 1, snapshot = 2, restore = 3 };

struct PsPushHeader {
  double kind = 0, clock = 0, final = 0, loss = 0, signal = 0, checkpoint = 0;
};
struct PsReplyHeader {
  double staleness = 0, held_s = 0, nonfinite = 0, agreed_step = 0, agreed_signal = 0, agreed_checkpoint = 0;
};
constexpr int kPsPushDoubles = 6, kPsReplyDoubles = 6, kPsPlanInts = 4;

}  // namespace ts
