// See device_check.h.
#include "dist/cuda/device_check.h"

#include <string>

#include "dist/mpi_comm.h"

namespace ts {

void throw_device_error(const char* library, const char* message, const char* call, const char* file, int line) {
  throw_call_error(call, file, line, std::string(library) + ": " + message);
}

}  // namespace ts
