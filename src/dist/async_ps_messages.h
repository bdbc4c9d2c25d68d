// dist-internal: the messages of async_ps between workers and servers (point to point on the
// world communicator, its own tags). Each message is a small header of doubles followed, where
// it carries one, by a shard of floats:
//   plan   rank 0 -> server: [param_count, total_steps, global_batch, steps_per_epoch], then the
//          shard's initial weights;
//   push   worker -> server: [kind (push | leave), clock, final, loss], then (push) the gradient shard;
//   reply  server -> worker: [staleness, held_s, nonfinite], then the shard's fresh weights.
// Non-blocking on both sides (MPI_Isend / MPI_Irecv), so no send waits for a receive that waits
// for another send.
#pragma once

#include <mpi.h>

namespace ts {

constexpr int kTagPsPlan = 201, kTagPsPlanData = 202, kTagPsPush = 203, kTagPsPushData = 204, kTagPsReply = 205,
              kTagPsReplyData = 206;

enum class PsMessage { push = 0, leave = 1 };

struct PsPushHeader {
  double kind = 0, clock = 0, final = 0, loss = 0;
};
struct PsReplyHeader {
  double staleness = 0, held_s = 0, nonfinite = 0;
};
constexpr int kPsPushDoubles = 4, kPsReplyDoubles = 3, kPsPlanInts = 4;

}  // namespace ts
