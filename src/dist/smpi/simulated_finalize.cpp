// trainscale-sim's end of MPI (see dist/bounded_finalize.h): MPI_Finalize as it is; SMPI's
// simulated ranks have no launcher to wait for and a real-time deadline would mean nothing.
#include <mpi.h>

#include "dist/bounded_finalize.h"

namespace ts {

void finalize_mpi_bounded(int /*exit_code*/) { MPI_Finalize(); }

}  // namespace ts
