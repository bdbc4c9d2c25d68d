// See allreduce_bench.h.
#include "dist/allreduce_bench.h"

#include <algorithm>
#include <cmath>
#include <numeric>
#include <vector>

#include "core/error.h"
#include "dist/mpi_comm.h"
#ifdef TRAINSCALE_HAVE_NCCL
#include "dist/cuda/device_exchange.h"
#endif

namespace ts {

float allreduce_check_value(int rank, int64_t i) { return static_cast<float>((i + 3 * rank) % 11 + rank % 5); }

int64_t count_wrong_elements(const float* data, int64_t count, int ranks) {
  int64_t wrong = 0;
  for (int64_t i = 0; i < count; ++i) {
    float expected = 0;
    for (int q = 0; q < ranks; ++q) expected += allreduce_check_value(q, i);
    wrong += data[i] != expected;
  }
  return wrong;
}

CallSpread call_spread(const std::vector<double>& seconds) {
  CallSpread s;
  if (seconds.empty()) return s;
  const auto [lo, hi] = std::minmax_element(seconds.begin(), seconds.end());
  s.min = *lo;
  s.max = *hi;
  if (seconds.size() < 2) return s;
  const double n = static_cast<double>(seconds.size());
  const double mean = std::accumulate(seconds.begin(), seconds.end(), 0.0) / n;
  double squares = 0;
  for (double t : seconds) squares += (t - mean) * (t - mean);
  s.stdev = std::sqrt(squares / (n - 1));
  return s;
}

void reduce_bench_times(Communicator& comm, const std::vector<double>& call_seconds, AllreduceBenchPoint& p) {
  const MPI_Comm mc = mpi_comm(comm);
  const int calls = static_cast<int>(call_seconds.size());
  double seconds = calls > 0 ? std::accumulate(call_seconds.begin(), call_seconds.end(), 0.0) / calls : 0.0;
  double sum = 0;
  TS_MPI(MPI_Reduce(&seconds, &p.time_min, 1, MPI_DOUBLE, MPI_MIN, 0, mc));
  TS_MPI(MPI_Reduce(&seconds, &p.time_max, 1, MPI_DOUBLE, MPI_MAX, 0, mc));
  TS_MPI(MPI_Reduce(&seconds, &sum, 1, MPI_DOUBLE, MPI_SUM, 0, mc));
  // Each call's slowest rank: the time the call took for the job as a whole.
  std::vector<double> slowest(call_seconds.size(), 0.0);
  TS_MPI(MPI_Reduce(call_seconds.data(), slowest.data(), calls, MPI_DOUBLE, MPI_MAX, 0, mc));
  if (comm.rank() == 0) {
    p.time_avg = sum / comm.size();
    const CallSpread spread = call_spread(slowest);
    p.call_min = spread.min;
    p.call_max = spread.max;
    p.call_stdev = spread.stdev;
  } else {
    p.time_min = p.time_max = 0;
  }
}

AllreduceBenchPoint bench_allreduce(Communicator& comm, const AllreduceBenchCase& c) {
  if (c.algorithm == AllreduceAlgorithm::nccl) {
    const std::string why = allreduce_algorithm_unavailable_reason(c.algorithm);
    if (!why.empty()) throw ConfigError("--algorithms nccl: " + why);
#ifdef TRAINSCALE_HAVE_NCCL
    return bench_nccl_allreduce(comm, c);
#endif
  }
  const MPI_Comm mc = mpi_comm(comm);
  // Timed calls run on zeros: float addition costs the same for any finite value, and repeated
  // in-place sums of anything else grow each call and could overflow over many iterations.
  std::vector<float> own(c.buffer ? 0 : static_cast<size_t>(c.count), 0.0f);
  float* data = c.buffer ? c.buffer : own.data();
  std::fill(data, data + c.count, 0.0f);
  for (int i = 0; i < c.warmup; ++i) allreduce_sum(comm, c.algorithm, data, c.count);
  TS_MPI(MPI_Barrier(mc));
  // One clock reading between calls: each call's time, and their sum is the loop's.
  std::vector<double> call_seconds(static_cast<size_t>(c.iters));
  double before = MPI_Wtime();
  for (int i = 0; i < c.iters; ++i) {
    allreduce_sum(comm, c.algorithm, data, c.count);
    const double after = MPI_Wtime();
    call_seconds[static_cast<size_t>(i)] = after - before;
    before = after;
  }

  AllreduceBenchPoint p;
  reduce_bench_times(comm, call_seconds, p);

  if (c.check) {
    const int r = comm.rank();
    for (int64_t i = 0; i < c.count; ++i) data[i] = allreduce_check_value(r, i);
    allreduce_sum(comm, c.algorithm, data, c.count);
    const int64_t wrong = count_wrong_elements(data, c.count, comm.size());
    TS_MPI(MPI_Allreduce(&wrong, &p.wrong, 1, MPI_INT64_T, MPI_SUM, mc));
  }
  return p;
}

}  // namespace ts
