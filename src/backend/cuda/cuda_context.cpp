// The CUDA context's shared pieces (see cuda_context.h) and the library error reporter.
#include "backend/cuda/cuda_context.h"

#include <string>

#include "backend/cuda/cuda_check.h"
#include "core/error.h"

namespace ts::cuda {

void throw_library_error(const char* library, const char* message, const char* call, const char* file, int line) {
  throw RuntimeError(std::string(library) + " error: " + message + " in " + call + " (" + file + ":" +
                     std::to_string(line) + ")");
}

void CudaContext::reserve_workspace(size_t bytes) {
  if (bytes <= workspace_bytes_) return;
  release_workspace();
  TS_CUDA_CHECK(cudaMalloc(&workspace_, bytes));
  workspace_bytes_ = bytes;
}

void CudaContext::release_workspace() {
  if (!workspace_) return;
  TS_CUDA_CHECK(cudaStreamSynchronize(stream));  // ops queued before may still use it
  TS_CUDA_CHECK(cudaFree(workspace_));
  workspace_ = nullptr;
  workspace_bytes_ = 0;
}

cudnnDataType_t cudnn_dtype(DType t) {
  switch (t) {
    case DType::f32: return CUDNN_DATA_FLOAT;
    case DType::f16: return CUDNN_DATA_HALF;
    case DType::bf16: return CUDNN_DATA_BFLOAT16;
    case DType::i32: return CUDNN_DATA_INT32;
    case DType::u8: return CUDNN_DATA_UINT8;
  }
  throw RuntimeError("cudnn_dtype: unknown data type");
}

cudaDataType_t cuda_dtype(DType t) {
  switch (t) {
    case DType::f32: return CUDA_R_32F;
    case DType::f16: return CUDA_R_16F;
    case DType::bf16: return CUDA_R_16BF;
    case DType::i32: return CUDA_R_32I;
    case DType::u8: return CUDA_R_8U;
  }
  throw RuntimeError("cuda_dtype: unknown data type");
}

}  // namespace ts::cuda
