// See device_check.h.
#include "dist/cuda/device_check.h"

#include <mpi.h>

#include <string>

#include "core/error.h"

namespace ts {

void throw_device_error(const char* library, const char* message, const char* call, const char* file, int line) {
  int initialized = 0, rank = -1;
  MPI_Initialized(&initialized);
  char host[MPI_MAX_PROCESSOR_NAME] = "?";
  int host_len = 1;
  if (initialized) {
    MPI_Comm_rank(MPI_COMM_WORLD, &rank);
    MPI_Get_processor_name(host, &host_len);
  }
  throw RuntimeError(source_location_string(file, line) + ": " + call + " failed on rank " + std::to_string(rank) +
                     " (" + std::string(host, static_cast<size_t>(host_len)) + "): " + library + ": " + message);
}

}  // namespace ts
