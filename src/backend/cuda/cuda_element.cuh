// Device-side helpers of the CUDA backend's own kernels (cuda_tensor_ops.cu, cuda_losses.cu,
// cuda_fc_kernels.cu, cuda_kernels.cu, cuda_dnn_kernels.cu): element access for any activation data type with the math in f32, the
// grid size of grid-stride loops, and a deterministic block reduction. CUDA sources only.
#pragma once

#include <algorithm>
#include <cstdint>

#include <cuda_bf16.h>
#include <cuda_fp16.h>
#include <cuda_runtime.h>

#include "backend/tensor.h"

namespace ts::cuda {

// Value i of an f32, f16 or bf16 array, as f32. The data type is uniform across a launch, so the
// branch costs a few instructions in what are memory-bound kernels, and one kernel serves every
// combination of input and output types.
__device__ __forceinline__ float load_as_float(const void* data, DType type, int64_t i) {
  switch (type) {
    case DType::f16: return __half2float(static_cast<const __half*>(data)[i]);
    case DType::bf16: return __bfloat162float(static_cast<const __nv_bfloat16*>(data)[i]);
    default: return static_cast<const float*>(data)[i];
  }
}

// data[i] = value rounded to nearest in `type` (f32, f16 or bf16).
__device__ __forceinline__ void store_from_float(void* data, DType type, int64_t i, float value) {
  switch (type) {
    case DType::f16: static_cast<__half*>(data)[i] = __float2half_rn(value); break;
    case DType::bf16: static_cast<__nv_bfloat16*>(data)[i] = __float2bfloat16_rn(value); break;
    default: static_cast<float*>(data)[i] = value; break;
  }
}

// The same for a typed array (the type known at compile time, one kernel per type).
__device__ __forceinline__ float load_as_float(const float* p, int64_t i) { return p[i]; }
__device__ __forceinline__ float load_as_float(const __half* p, int64_t i) { return __half2float(p[i]); }
__device__ __forceinline__ float load_as_float(const __nv_bfloat16* p, int64_t i) { return __bfloat162float(p[i]); }
__device__ __forceinline__ void store_from_float(float* p, int64_t i, float v) { p[i] = v; }
__device__ __forceinline__ void store_from_float(__half* p, int64_t i, float v) { p[i] = __float2half_rn(v); }
__device__ __forceinline__ void store_from_float(__nv_bfloat16* p, int64_t i, float v) { p[i] = __float2bfloat16_rn(v); }

constexpr int kThreadsPerBlock = 256;

// Blocks of kThreadsPerBlock for a grid-stride loop over n elements: one element per thread up to
// a grid that fills any current GPU several times over; beyond, each thread loops.
inline unsigned grid_blocks(int64_t n) {
  return static_cast<unsigned>(std::clamp<int64_t>((n + kThreadsPerBlock - 1) / kThreadsPerBlock, 1, 8192));
}

// A grid-stride loop: for (int64_t i = grid_first(); i < n; i += grid_stride()) visits every i
// in [0, n) once over the whole grid.
__device__ __forceinline__ int64_t grid_first() { return int64_t(blockIdx.x) * blockDim.x + threadIdx.x; }
__device__ __forceinline__ int64_t grid_stride() { return int64_t(gridDim.x) * blockDim.x; }

struct SumOp {
  __device__ float operator()(float a, float b) const { return a + b; }
};
struct MaxOp {
  __device__ float operator()(float a, float b) const { return fmaxf(a, b); }
};

// Reduces v over the block (blockDim.x a multiple of 32, at most 1024; every thread of the block
// must call it) and returns the result in every thread. The order of operations depends only on
// blockDim.x, so results are bitwise reproducible run to run.
template <class Op>
__device__ float block_reduce(float v, Op op, float identity) {
  __shared__ float warp_results[32];
  for (int offset = 16; offset > 0; offset /= 2) v = op(v, __shfl_xor_sync(0xffffffffu, v, offset));
  const int lane = static_cast<int>(threadIdx.x % 32), warp = static_cast<int>(threadIdx.x / 32);
  __syncthreads();  // readers of an earlier call are done with warp_results
  if (lane == 0) warp_results[warp] = v;
  __syncthreads();
  v = lane < static_cast<int>(blockDim.x / 32) ? warp_results[lane] : identity;
  for (int offset = 16; offset > 0; offset /= 2) v = op(v, __shfl_xor_sync(0xffffffffu, v, offset));
  return v;
}

}  // namespace ts::cuda
