// How a process leaves MPI (MpiSession's destructor). MPI_Finalize is collective in practice:
// MPICH 4.0 over UCX (Debian's ch4:ucx) closes its endpoints in MPI_Finalize and one rank can
// wait forever for a peer that already went on into the launcher's PMI barrier and no longer
// drives UCX (measured on the test bed of docs/multihost.md: 2 hosts x 2 ranks, about four
// runs in five hung after their run files were written). An MPI barrier first brings every rank
// to the closing together but does not remove the hang (the deadline still ended 5 of 8 runs),
// so a deadline ends what is left: results are written before MPI_Finalize, so a process whose
// finalize does not return within kFinalizeDeadlineSeconds says so and exits with its own code. Hydra then reports that code for
// most such jobs (sometimes 255: its proxy fails writing the PMI barrier's answer to a rank that
// left); Open MPI's finalize (ob1/TCP) and Intel MPI's did not hang here (docs/multihost.md
// "MPICH across hosts").
// trainscale-sim compiles dist/smpi/simulated_finalize.cpp instead (plain MPI_Finalize: a
// real-time deadline means nothing to a simulated rank).
#pragma once

#include <functional>

namespace ts {

inline constexpr int kFinalizeDeadlineSeconds = 15;

// MPI_Barrier on MPI_COMM_WORLD (more than one rank) and MPI_Finalize, bounded as above;
// `exit_code` is what the process exits with if the deadline passes.
void finalize_mpi_bounded(int exit_code);

// Runs `body` on this thread; if it has not returned within `seconds`, another thread prints
// "trainscale: <what> did not return within <seconds> s (<why>); exiting with code <exit_code>"
// on stderr and ends the process with _exit(exit_code). finalize_mpi_bounded's mechanism.
void run_with_deadline(int seconds, int exit_code, const char* what, const char* why, const std::function<void()>& body);

}  // namespace ts
