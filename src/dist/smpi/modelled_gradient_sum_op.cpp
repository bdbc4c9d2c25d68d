// MPI_Allreduce's sum in a simulation (dist/mpi_comm.h, dist/smpi/simulation.h). SMPI applies
// MPI_SUM on the host, and host time is not simulated (smpi/simulate-computation: no), so
// dist.allreduce: mpi would reduce for free while the hand-written algorithms pay add_into's
// memory time. This user operation pays the same: SMPI calls it in the receiving rank's actor
// for each block its algorithm combines, and add_into (modelled_reduce_kernel.cpp) makes that
// actor wait out 12 bytes per float at the node's bandwidth, leaving the data alone.
#include "dist/mpi_comm.h"
#include "dist/reduce_kernel.h"

namespace ts {
namespace {

void modelled_float_sum(void* in, void* inout, int* len, MPI_Datatype* /*MPI_FLOAT*/) {
  add_into(static_cast<float*>(inout), static_cast<const float*>(in), *len);
}

}  // namespace

MPI_Op gradient_sum_op() {
  // One operation for every simulated rank (they share the process); made by the first caller.
  // Not a function-local static: the ranks are actors of one thread, and MPI_Op_create is an
  // SMPI call that may switch actors inside the guard.
  static MPI_Op op = MPI_OP_NULL;
  if (op == MPI_OP_NULL) TS_MPI(MPI_Op_create(&modelled_float_sum, /*commute=*/1, &op));
  return op;
}

}  // namespace ts
