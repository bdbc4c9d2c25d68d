// dist-internal (CUDA builds): checks for the CUDA runtime and NCCL calls of dist/cuda. A failed
// call throws RuntimeError naming the library, its message, the call, file:line, rank and host.
#pragma once

#include <cuda_runtime.h>
#include <nccl.h>

namespace ts {

[[noreturn]] void throw_device_error(const char* library, const char* message, const char* call, const char* file,
                                     int line);

}  // namespace ts

#define TS_DIST_CUDA(call)                                                                 \
  do {                                                                                     \
    const cudaError_t ts_e_ = (call);                                                      \
    if (ts_e_ != cudaSuccess)                                                              \
      ::ts::throw_device_error("CUDA", cudaGetErrorString(ts_e_), #call, __FILE__, __LINE__); \
  } while (0)

#define TS_NCCL(call)                                                                       \
  do {                                                                                      \
    const ncclResult_t ts_r_ = (call);                                                      \
    if (ts_r_ != ncclSuccess)                                                               \
      ::ts::throw_device_error("NCCL", ncclGetErrorString(ts_r_), #call, __FILE__, __LINE__); \
  } while (0)
