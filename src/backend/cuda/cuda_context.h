// What every planned CUDA op shares with its backend (backend/cuda): the device, the one stream
// all work is queued on, the library handles, the run's precision, the workspace and the log of
// what planning chose. Ops keep a reference; the backend outlives them.
//
// Conventions of the CUDA backend (docs/architecture.md "backend/cuda"):
// * a tensor is plain (row-major NCHW / (mb, features)) or, 4-D only, channels-last NHWC
//   (cuda_layout.h: 4-D outputs requested "any" are NHWC in tf32/fp16/bf16 runs, plain in fp32);
//   the data type of an activation is act_dtype(): f32 for fp32 and tf32, f16 for fp16, bf16 for
//   bf16;
// * an op accepts inputs of any of those data types and layouts (the input image is plain f32
//   even in fp16 runs) and converts them itself, into buffers it owns (cuda_dtype_port.h);
//   outputs requested as "any" get act_dtype() in the op's layout;
// * parameters and their gradients are f32 (master weights); an op that computes in f16/bf16
//   converts its weights at forward and its weight gradients back to f32;
// * every call only enqueues work on `stream` (no host synchronisation).
#pragma once

#include <cstddef>
#include <string>
#include <vector>

#include <cublasLt.h>
#include <cublas_v2.h>
#include <cuda_runtime.h>
#include <cudnn.h>

#include "backend/backend.h"

namespace ts::cuda {

struct CudaContext {
  int device = 0;
  cudaStream_t stream = nullptr;
  cudnnHandle_t cudnn = nullptr;
  cublasHandle_t cublas = nullptr;
  cublasLtHandle_t cublas_lt = nullptr;
  Precision precision = Precision::fp32;
  // The most workspace one op may use (bytes): algorithms that need more are not chosen.
  size_t workspace_limit = size_t{512} << 20;
  AlgorithmChoice algorithm_choice = AlgorithmChoice::find;  // cuda.algorithms (cuda_conv_algos.h)
  ConvApi conv_api = ConvApi::legacy;                        // cuda.conv_api (cuda_conv_graph.h)
  bool reduced_precision_reduction = false;                  // cuda.reduced_precision_reduction (graph)
  std::vector<std::string> plan_notes;  // one line per planned op that chose something

  DType act_dtype() const {
    return precision == Precision::fp16 ? DType::f16 : precision == Precision::bf16 ? DType::bf16 : DType::f32;
  }
  // The shared workspace (ops run one after the other on `stream`): reserve at plan time, get at
  // execution. Growing frees the old block (after a device synchronisation), so ops must not keep
  // the pointer across calls.
  void reserve_workspace(size_t bytes);
  void* workspace() const { return workspace_; }
  size_t workspace_bytes() const { return workspace_bytes_; }
  void release_workspace();

 private:
  void* workspace_ = nullptr;
  size_t workspace_bytes_ = 0;
};

// cuDNN / CUDA data type of a DType (f32, f16, bf16; i32 and u8 for the tensors that have them).
cudnnDataType_t cudnn_dtype(DType t);
cudaDataType_t cuda_dtype(DType t);

}  // namespace ts::cuda
