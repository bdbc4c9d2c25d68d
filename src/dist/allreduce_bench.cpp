// See allreduce_bench.h.
#include "dist/allreduce_bench.h"

#include <algorithm>
#include <vector>

#include "core/error.h"
#include "dist/mpi_comm.h"
#ifdef TRAINSCALE_HAVE_NCCL
#include "dist/cuda/device_exchange.h"
#endif

namespace ts {

float allreduce_check_value(int rank, int64_t i) { return static_cast<float>((i + 3 * rank) % 11 + rank % 5); }

void reduce_bench_times(Communicator& comm, double seconds, AllreduceBenchPoint& p) {
  const MPI_Comm mc = mpi_comm(comm);
  double sum = 0;
  TS_MPI(MPI_Reduce(&seconds, &p.time_min, 1, MPI_DOUBLE, MPI_MIN, 0, mc));
  TS_MPI(MPI_Reduce(&seconds, &p.time_max, 1, MPI_DOUBLE, MPI_MAX, 0, mc));
  TS_MPI(MPI_Reduce(&seconds, &sum, 1, MPI_DOUBLE, MPI_SUM, 0, mc));
  if (comm.rank() == 0) p.time_avg = sum / comm.size();
  else p.time_min = p.time_max = 0;
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
  const double t0 = MPI_Wtime();
  for (int i = 0; i < c.iters; ++i) allreduce_sum(comm, c.algorithm, data, c.count);
  const double mean = (MPI_Wtime() - t0) / c.iters;

  AllreduceBenchPoint p;
  reduce_bench_times(comm, mean, p);

  if (c.check) {
    const int n = comm.size(), r = comm.rank();
    for (int64_t i = 0; i < c.count; ++i) data[i] = allreduce_check_value(r, i);
    allreduce_sum(comm, c.algorithm, data, c.count);
    int64_t wrong = 0;
    for (int64_t i = 0; i < c.count; ++i) {
      float expected = 0;
      for (int q = 0; q < n; ++q) expected += allreduce_check_value(q, i);
      wrong += data[i] != expected;
    }
    TS_MPI(MPI_Allreduce(&wrong, &p.wrong, 1, MPI_INT64_T, MPI_SUM, mc));
  }
  return p;
}

}  // namespace ts
