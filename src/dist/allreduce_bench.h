// The measuring core of `trainscale bench allreduce` (nccl-tests style): one algorithm at one
// message size, warm-up excluded, time per call reduced across ranks, correctness counted.
// Every algorithm sums its buffer in place (allreduce_sum has no out-of-place form), so the
// benchmark measures in-place calls only.
#pragma once

#include <cstdint>
#include <vector>

#include "dist/allreduce.h"
#include "dist/communicator.h"

namespace ts {

struct AllreduceBenchCase {
  // nccl (CUDA builds) runs on a device buffer of its own, on device local_rank % visible
  // devices; the others on host memory.
  AllreduceAlgorithm algorithm = AllreduceAlgorithm::mpi;
  int64_t count = 0;  // float elements
  int iters = 20;     // timed calls
  int warmup = 5;     // untimed calls before them
  bool check = true;  // one extra call on known data afterwards, wrong elements counted
  // Where the message lives (host algorithms): nullptr = a private vector; else at least
  // `count` floats, e.g. from allocate_shared_floats (then `shm` runs in place).
  float* buffer = nullptr;
};

// Seconds per call: each rank's mean over the timed loop, then min / mean / max over ranks;
// and the call-to-call spread those means hide: each timed call's time on its slowest rank
// (the max over ranks of that call's time), then min / max / standard deviation over the calls.
// Valid on rank 0 only (other ranks get zeros). `wrong` is the number of wrong elements summed
// over all ranks (every rank gets it), or -1 when the check was off.
struct AllreduceBenchPoint {
  double time_avg = 0, time_min = 0, time_max = 0;
  double call_min = 0, call_max = 0, call_stdev = 0;
  int64_t wrong = -1;
};

// ConfigError for nccl where it cannot run (allreduce_algorithm_unavailable_reason).
AllreduceBenchPoint bench_allreduce(Communicator& comm, const AllreduceBenchCase& c);

// Shared by the host and the device (nccl) benchmarks:
// Element i of rank `rank`'s checked message: small integers, so sums over any realistic
// number of ranks are exact in float and the result is known bit for bit whatever order an
// algorithm adds in.
float allreduce_check_value(int rank, int64_t i);
// The wrong elements of `data` after an all-reduce of allreduce_check_value over `ranks` ranks:
// each element is compared with the exact sum (small integers: exact in float in any order).
int64_t count_wrong_elements(const float* data, int64_t count, int ranks);

// Min, max and standard deviation (n - 1 in the denominator; 0 for one value) of `seconds`.
struct CallSpread {
  double min = 0, max = 0, stdev = 0;
};
CallSpread call_spread(const std::vector<double>& seconds);

// From each rank's `call_seconds` (one per timed call, the same number on every rank): p's
// time_min / time_avg / time_max over ranks of each rank's mean, and call_min / call_max /
// call_stdev over the calls of each call's slowest rank (rank 0; zeros elsewhere). Collective.
void reduce_bench_times(Communicator& comm, const std::vector<double>& call_seconds, AllreduceBenchPoint& p);

}  // namespace ts
