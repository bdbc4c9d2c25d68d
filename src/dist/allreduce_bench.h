// The measuring core of `trainscale bench allreduce` (nccl-tests style): one algorithm at one
// message size, warm-up excluded, time per call reduced across ranks, correctness counted.
#pragma once

#include <cstdint>

#include "dist/allreduce.h"
#include "dist/communicator.h"

namespace ts {

struct AllreduceBenchCase {
  AllreduceAlgorithm algorithm = AllreduceAlgorithm::mpi;
  int64_t count = 0;  // float elements
  int iters = 20;     // timed calls
  int warmup = 5;     // untimed calls before them
  bool check = true;  // one extra call on known data afterwards, wrong elements counted
  // Where the message lives: nullptr = a private vector; else at least `count` floats, e.g. from
  // allocate_shared_floats (then `shm` runs in place).
  float* buffer = nullptr;
};

// Seconds per call: each rank's mean over the timed loop, then min / mean / max over ranks.
// Valid on rank 0 only (other ranks get zeros). `wrong` is the number of wrong elements summed
// over all ranks (every rank gets it), or -1 when the check was off.
struct AllreduceBenchPoint {
  double time_avg = 0, time_min = 0, time_max = 0;
  int64_t wrong = -1;
};

AllreduceBenchPoint bench_allreduce(Communicator& comm, const AllreduceBenchCase& c);

}  // namespace ts
