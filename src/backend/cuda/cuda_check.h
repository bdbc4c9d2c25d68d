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

#define TS_CUDA_CHECK(call)                                                                        \
  do {                                                                                             \
    const cudaError_t ts_e_ = (call);                                                              \
    if (ts_e_ != cudaSuccess)                                                                      \
      ::ts::cuda::throw_library_error("CUDA", cudaGetErrorString(ts_e_), #call, __FILE__, __LINE__); \
  } while (0)

#define TS_CUDNN_CHECK(call)                                                                        \
  do {                                                                                              \
    const cudnnStatus_t ts_s_ = (call);                                                             \
    if (ts_s_ != CUDNN_STATUS_SUCCESS)                                                              \
      ::ts::cuda::throw_library_error("cuDNN", cudnnGetErrorString(ts_s_), #call, __FILE__, __LINE__); \
  } while (0)

#define TS_CUBLAS_CHECK(call)                                                                          \
  do {                                                                                                 \
    const cublasStatus_t ts_s_ = (call);                                                               \
    if (ts_s_ != CUBLAS_STATUS_SUCCESS)                                                                \
      ::ts::cuda::throw_library_error("cuBLAS", cublasGetStatusString(ts_s_), #call, __FILE__, __LINE__); \
  } while (0)
