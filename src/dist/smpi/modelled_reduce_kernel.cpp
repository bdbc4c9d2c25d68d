// The reductions' arithmetic in a simulation (see dist/reduce_kernel.h, dist/smpi/simulation.h):
// the calling rank spends the loop's memory time (bytes read and written / the node's memory
// bandwidth) in simulated time, and the data are left as they are. The buffers are
// SMPI shared memory that every simulated rank writes, so real sums would be meaningless, and a
// thousand ranks summing 100 MB each would take the host minutes per step.
#include <simgrid/s4u/Actor.hpp>

#include "dist/reduce_kernel.h"
#include "dist/smpi/simulation.h"

namespace ts {
namespace {

double memory_bandwidth = 0;  // bytes per second; 0: free

// The rank waits out the loop's time. A sleep, not an execution on the host's cores: the node
// gives the reductions a core of their own (sim/platform.h), so nothing competes for it, and a
// sleep costs SimGrid less work per call than an execution (a 1,000-rank ring makes millions).
void spend_memory_time(double bytes) {
  if (memory_bandwidth <= 0 || bytes <= 0) return;
  simgrid::s4u::this_actor::sleep_for(bytes / memory_bandwidth);
}

}  // namespace

void set_simulated_memory_bandwidth(double bytes_per_second) { memory_bandwidth = bytes_per_second; }

void add_into(float* __restrict, const float* __restrict, int64_t count) {
  spend_memory_time(3.0 * sizeof(float) * static_cast<double>(count));  // read dst and src, write dst
}

void scale(float*, int64_t count, float) {
  spend_memory_time(2.0 * sizeof(float) * static_cast<double>(count));  // read and write
}

}  // namespace ts
