// dist/smpi: the pieces of dist/ that trainscale-sim builds differently, because its ranks are
// SimGrid SMPI actors in one process (docs/model.md "Simulation"):
//   inline_comm_thread.cpp      CommThread runs its jobs in the caller (SMPI lets one actor per
//                               rank call MPI; the simulation overlaps compute instead, sim/);
//   modelled_reduce_kernel.cpp  add_into/scale charge the simulated node their memory time and
//                               leave the data alone (no host arithmetic at 1,000 ranks);
//   modelled_mpi_sum.cpp        dist.allreduce: mpi sums with a user operation that does the
//                               same (SMPI's collectives pay the reduction) and sends from the
//                               shared block (MPI_IN_PLACE makes SMPI copy each rank's buffer);
//   shared_scratch_memory.cpp   large receive buffers are SMPI shared memory, one block for all
//                               ranks (SMPI copies nothing into shared memory);
//   shm_not_simulated.cpp       the shm all-reduce is refused (its ranks poll shared memory
//                               without MPI calls, which a simulation cannot schedule);
//   rank_init.cpp               MPI start-up of a simulated rank (init_simulated_rank);
//   simulated_request_wait.cpp  the host algorithms wait with MPI_Waitall (the real build sleeps
//                               between tests, dist/request_wait.h; a sleep here is real time).
// The rest of dist/ is compiled unchanged against SMPI's mpi.h. This header is what the
// simulator (sim/) sets up; it is not part of the trainscale binary.
#pragma once

#include <cstddef>

namespace ts {

// The memory bandwidth (bytes per second) a simulated node sums and scales at: add_into over n
// floats costs 12 n bytes / bandwidth of simulated time, scale 8 n bytes / bandwidth (the
// gamma of docs/allreduce.md is 3 / bandwidth per byte). 0 (the default): free.
// Process-wide (every simulated node is of the one cluster); set before the simulation runs.
void set_simulated_memory_bandwidth(double bytes_per_second);

// At least `bytes` of SMPI shared memory (64-byte aligned): one block that every caller of the
// process gets (a larger request maps a larger block; earlier ones stay mapped until the process
// ends). Its contents are meaningless: every simulated rank writes the same pages.
void* simulated_shared_block(size_t bytes);

// Starts MPI in a simulated rank (MPI_Init_thread, FUNNELED: only the rank's own actor calls
// MPI) and points SMPI's MPI_COMM_WORLD at the rank's instance as smpirun does, before anything
// derives a communicator from it. Call first in every rank; MpiSession then finds MPI started.
void init_simulated_rank(int* argc, char*** argv);

}  // namespace ts
