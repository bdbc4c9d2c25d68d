// MPI start-up of a simulated rank (see dist/smpi/simulation.h).
//
// smpirun, after registering its one SMPI instance, points the library's global MPI_COMM_WORLD at
// that instance's world communicator; an instance started from a program of our own (S4U +
// SMPI_app_instance_register) keeps the placeholder, and SimGrid 3.32 then crashes when a
// communicator derived from MPI_COMM_WORLD (our Communicator's duplicate) meets an SMP-aware
// collective (the mpich, mvapich2 and impi selectors). The rank's world communicator is held by
// SMPI's per-actor extension, whose class is exported by libsimgrid but declared only in its
// private headers: the two members used here are declared below as the library defines them.
#include <mpi.h>
#include <simgrid/s4u/Actor.hpp>
#include <smpi/forward.hpp>

#include "dist/mpi_comm.h"
#include "dist/smpi/simulation.h"

namespace simgrid::smpi {
class ActorExt {
 public:
  static xbt::Extension<s4u::Actor, ActorExt> EXTENSION_ID;
  MPI_Comm comm_world() const;
};
}  // namespace simgrid::smpi

namespace ts {

void init_simulated_rank(int* argc, char*** argv) {
  int initialized = 0;
  MPI_Initialized(&initialized);
  if (!initialized) {
    int provided = 0;
    TS_MPI(MPI_Init_thread(argc, argv, MPI_THREAD_FUNNELED, &provided));
  }
  const auto* ext = simgrid::s4u::Actor::self()->extension<simgrid::smpi::ActorExt>();
  if (ext != nullptr && ext->comm_world() != MPI_COMM_NULL) MPI_COMM_WORLD = ext->comm_world();
}

}  // namespace ts
