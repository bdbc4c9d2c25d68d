// dist-internal (CUDA builds): checks for the CUDA runtime and NCCL calls of dist/cuda. A failed
// call throws RuntimeError naming the library, its message, the call, file:line, rank and host.
#pragma once

#include <cuda_runtime.h>
#include <nccl.h>

namespace ts {

[[noreturn]] void throw_device_error(const char* library, const char* message, const char* call, const char* file,
                                     int line);

}  // namespace ts

// `call` (its text `text`, as written) returns a `type` that is `ok` on success; `describe`
// turns another into its message.
#define TS_DIST_DEVICE_CALL(call, text, type, ok, library, describe)                    \
  do {                                                                                  \
    const type ts_status_ = (call);                                                     \
    if (ts_status_ != ok)                                                               \
      ::ts::throw_device_error(library, describe(ts_status_), text, __FILE__, __LINE__); \
  } while (0)

#define TS_DIST_CUDA(call) TS_DIST_DEVICE_CALL(call, #call, cudaError_t, cudaSuccess, "CUDA", cudaGetErrorString)
#define TS_NCCL(call) TS_DIST_DEVICE_CALL(call, #call, ncclResult_t, ncclSuccess, "NCCL", ncclGetErrorString)
