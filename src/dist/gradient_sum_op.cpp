// The sum of dist.allreduce: mpi (mpi_comm.h): the library's own MPI_SUM, which a tuned MPI
// applies with its vectorised loops. trainscale-sim replaces this file (dist/smpi/).
#include "dist/mpi_comm.h"

namespace ts {

MPI_Op gradient_sum_op() { return MPI_SUM; }

}  // namespace ts
