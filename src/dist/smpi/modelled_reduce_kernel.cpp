// The reductions' arithmetic in a simulation (see dist/reduce_kernel.h, dist/smpi/simulation.h):
// the calling rank's node spends the loop's memory time (bytes read and written / the node's
// memory bandwidth) as a simulated execution, and the data are left as they are. The buffers are
// SMPI shared memory that every simulated rank writes, so real sums would be meaningless, and a
// thousand ranks summing 100 MB each would take the host minutes per step.
#include <simgrid/s4u/Actor.hpp>
#include <simgrid/s4u/Host.hpp>

#include "dist/reduce_kernel.h"
#include "dist/smpi/simulation.h"

namespace ts {
namespace {

double memory_bandwidth = 0;  // bytes per second; 0: free

void spend_memory_time(double bytes) {
  if (memory_bandwidth <= 0 || bytes <= 0) return;
  namespace s4u = simgrid::s4u;
  s4u::this_actor::execute(bytes / memory_bandwidth * s4u::this_actor::get_host()->get_speed());
}

}  // namespace

void set_simulated_memory_bandwidth(double bytes_per_second) { memory_bandwidth = bytes_per_second; }

double simulated_memory_bandwidth() { return memory_bandwidth; }

void add_into(float* __restrict, const float* __restrict, int64_t count) {
  spend_memory_time(3.0 * sizeof(float) * static_cast<double>(count));  // read dst and src, write dst
}

void scale(float*, int64_t count, float) {
  spend_memory_time(2.0 * sizeof(float) * static_cast<double>(count));  // read and write
}

}  // namespace ts
