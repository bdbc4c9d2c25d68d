// Error checks for the CUDA runtime, cuDNN and cuBLAS: a failed call throws RuntimeError naming
// the library, its message, the call and the source line (the run exits 1 with that message).
#pragma once

#include <cublasLt.h>
#include <cublas_v2.h>
#include <cuda_runtime.h>
#include <cudnn.h>

namespace ts::cuda {

[[noreturn]] void throw_library_error(const char* library, const char* message, const char* call,
                                      const char* file, int line);

}  // namespace ts::cuda

// The three checks below share this one: anything but `ok` throws with describe(status). `text`
// is the call as written (stringized by each check, before its macros expand).
#define TS_LIBRARY_CHECK_(Status, ok, library, describe, call, text)                                      \
  do {                                                                                                    \
    const Status ts_s_ = (call);                                                                          \
    if (ts_s_ != ok) ::ts::cuda::throw_library_error(library, describe(ts_s_), text, __FILE__, __LINE__); \
  } while (0)

#define TS_CUDA_CHECK(call) TS_LIBRARY_CHECK_(cudaError_t, cudaSuccess, "CUDA", cudaGetErrorString, call, #call)
#define TS_CUDNN_CHECK(call) \
  TS_LIBRARY_CHECK_(cudnnStatus_t, CUDNN_STATUS_SUCCESS, "cuDNN", cudnnGetErrorString, call, #call)
#define TS_CUBLAS_CHECK(call) \
  TS_LIBRARY_CHECK_(cublasStatus_t, CUBLAS_STATUS_SUCCESS, "cuBLAS", cublasGetStatusString, call, #call)
