// dist.allreduce: mpi in a simulation (dist/mpi_comm.h, dist/smpi/simulation.h). Two things
// differ from the real call, both for SMPI's sake:
// - the sum: SMPI applies MPI_SUM on the host, where time is not simulated
//   (smpi/simulate-computation: no), so the all-reduce would reduce for free while the
//   hand-written algorithms pay add_into's memory time. A user operation pays the same: SMPI
//   calls it in the receiving rank's actor for each block its algorithm combines, and add_into
//   (modelled_reduce_kernel.cpp) makes that actor wait out 12 bytes per float at the node's
//   bandwidth, leaving the data alone;
// - MPI_IN_PLACE: SMPI 3.32 copies the buffer into a zero-filled temporary of its own for the
//   call, as large as the bucket: 26 MB per rank for a 25 MiB bucket, 26 GB at 1,000 ranks. The
//   send side is the shared block instead, whose pages SMPI neither copies nor the simulation
//   reads.
#include "dist/mpi_comm.h"
#include "dist/reduce_kernel.h"
#include "dist/smpi/simulation.h"

namespace ts {
namespace {

void modelled_float_sum(void* in, void* inout, int* len, MPI_Datatype* /*MPI_FLOAT*/) {
  add_into(static_cast<float*>(inout), static_cast<const float*>(in), *len);
}

MPI_Op modelled_sum_op() {
  // One operation for every simulated rank (they share the process); made by the first caller.
  // Not a function-local static: the ranks are actors of one thread, and MPI_Op_create is an
  // SMPI call that may switch actors inside the guard.
  static MPI_Op op = MPI_OP_NULL;
  if (op == MPI_OP_NULL) TS_MPI(MPI_Op_create(&modelled_float_sum, /*commute=*/1, &op));
  return op;
}

}  // namespace

void mpi_allreduce_sum_in_place(MPI_Comm comm, float* data, int count) {
  const void* send = simulated_shared_block(static_cast<size_t>(count) * sizeof(float));
  TS_MPI(MPI_Allreduce(send, data, count, MPI_FLOAT, modelled_sum_op(), comm));
}

}  // namespace ts
