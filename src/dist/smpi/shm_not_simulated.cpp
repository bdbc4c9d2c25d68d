// The shm all-reduce in a simulation (see dist/shm_allreduce.h, dist/smpi/simulation.h): refused.
// Its ranks wait for each other by polling counters in shared memory, without an MPI call, and
// SMPI schedules a simulated rank only when it calls MPI (or SimGrid), so a waiting rank would
// never let the others run; and what it measures, copies through one node's memory, is not
// what the simulated network models. The settings are kept, as the real file does.
#include "core/error.h"
#include "dist/shm_allreduce.h"

namespace ts {
namespace {

ShmAllreduceSettings settings;

[[noreturn]] void refuse() {
  throw ConfigError("dist.allreduce: shm is not simulated (its ranks synchronise by polling shared memory, which a "
                    "SimGrid simulation cannot schedule); simulate ring, tree, ps or mpi, or measure shm with "
                    "trainscale run");
}

}  // namespace

void set_shm_allreduce_settings(const ShmAllreduceSettings& s) { settings = s; }

ShmAllreduceSettings shm_allreduce_settings() { return settings; }

float* shm_allocate(MPI_Comm, int64_t) { refuse(); }

ShmTopology shm_topology(MPI_Comm) { refuse(); }

void shm_allreduce_sum(MPI_Comm, float*, int64_t, const CrossNodeAllreduce&) { refuse(); }

}  // namespace ts
