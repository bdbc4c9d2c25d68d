// dist.allreduce: mpi (mpi_comm.h): the library's MPI_Allreduce in place with MPI_SUM, which a
// tuned MPI applies with its vectorised loops. trainscale-sim replaces this file (dist/smpi/).
#include "dist/mpi_comm.h"

namespace ts {

void mpi_allreduce_sum_in_place(MPI_Comm comm, float* data, int count) {
  TS_MPI(MPI_Allreduce(MPI_IN_PLACE, data, count, MPI_FLOAT, MPI_SUM, comm));
}

}  // namespace ts
