// Own kernels of the cuDNN-backed ops (cuda_dnn_kernels.h): grid-stride loops over plain
// tensors, one template per kernel over the storage type (float, __half, __nv_bfloat16), values
// computed in f32.
#include "backend/cuda/cuda_dnn_kernels.h"

#include <algorithm>
#include <string>

#include <cuda_bf16.h>
#include <cuda_fp16.h>

#include "backend/cuda/cuda_check.h"
#include "backend/cuda/cuda_element.cuh"
#include "core/error.h"

namespace ts::cuda {
namespace {

constexpr int kThreads = 256;
constexpr int64_t kMaxBlocks = 65536;  // grid-stride loops cover the rest

int blocks_for(int64_t n) { return static_cast<int>(std::clamp<int64_t>((n + kThreads - 1) / kThreads, 1, kMaxBlocks)); }

// Calls f(T{}) with T the storage type of `dtype` (f32, f16, bf16).
template <typename F>
void with_storage_type(DType dtype, const char* kernel, F&& f) {
  switch (dtype) {
    case DType::f32: f(float{}); return;
    case DType::f16: f(__half{}); return;
    case DType::bf16: f(__nv_bfloat16{}); return;
    default: break;
  }
  throw RuntimeError(std::string("cuda kernel ") + kernel + ": data type " + dtype_name(dtype) +
                     " is not one of f32, f16, bf16");
}

void check_launch(const char* kernel) {
  const cudaError_t e = cudaGetLastError();
  if (e != cudaSuccess) throw_library_error("CUDA", cudaGetErrorString(e), kernel, __FILE__, __LINE__);
}

// dst (mb,channels,hw) or, nhwc, (mb,hw,channels): dst = [relu](dst + bias[c])
template <typename T>
__global__ void bias_relu_kernel(T* dst, const float* bias, int64_t channels, int64_t hw, int64_t n, bool relu,
                                 bool nhwc) {
  for (int64_t i = blockIdx.x * int64_t(blockDim.x) + threadIdx.x; i < n; i += int64_t(gridDim.x) * blockDim.x) {
    float v = load_as_float(dst, i);
    if (bias) v += bias[nhwc ? i % channels : (i / hw) % channels];
    store_from_float(dst, i, relu && v < 0.0f ? 0.0f : v);  // a NaN stays NaN (an fp16 overflow must show)
  }
}

// One block per channel c: diff_bia[c] = sum over n < mb, s < hw of diff_dst[(n, c, s)] (stored at
// (n, s, c) when nhwc).
template <typename T>
__global__ void bias_backward_kernel(const T* diff_dst, int64_t mb, int64_t channels, int64_t hw, bool nhwc,
                                     float* diff_bia) {
  __shared__ double partial[kThreads];
  const int64_t c = blockIdx.x;
  double acc = 0.0;
  for (int64_t i = threadIdx.x; i < mb * hw; i += blockDim.x) {  // i = (n, s)
    const int64_t n = i / hw, s = i % hw;
    acc += load_as_float(diff_dst, nhwc ? (n * hw + s) * channels + c : (n * channels + c) * hw + s);
  }
  partial[threadIdx.x] = acc;
  __syncthreads();
  for (int stride = kThreads / 2; stride > 0; stride /= 2) {
    if (threadIdx.x < stride) partial[threadIdx.x] += partial[threadIdx.x + stride];
    __syncthreads();
  }
  if (threadIdx.x == 0) diff_bia[c] = static_cast<float>(partial[0]);
}

template <typename T>
__global__ void relu6_forward_kernel(const T* src, T* dst, int64_t n) {
  for (int64_t i = blockIdx.x * int64_t(blockDim.x) + threadIdx.x; i < n; i += int64_t(gridDim.x) * blockDim.x) {
    const float x = load_as_float(src, i);
    store_from_float(dst, i, x > 0.0f ? (x < 6.0f ? x : 6.0f) : 0.0f);  // ref's expression
  }
}

template <typename T>
__global__ void relu6_backward_kernel(const T* src, const T* diff_dst, T* diff_src, int64_t n) {
  for (int64_t i = blockIdx.x * int64_t(blockDim.x) + threadIdx.x; i < n; i += int64_t(gridDim.x) * blockDim.x) {
    const float x = load_as_float(src, i);
    store_from_float(diff_src, i, x > 0.0f && x < 6.0f ? load_as_float(diff_dst, i) : 0.0f);
  }
}

}  // namespace

void bias_relu_forward(void* dst, DType dtype, const float* bias, int64_t mb, int64_t channels, int64_t hw, bool relu,
                       bool nhwc, cudaStream_t stream) {
  const int64_t n = mb * channels * hw;
  if (n == 0 || (!bias && !relu)) return;
  with_storage_type(dtype, "bias_relu_forward", [&](auto tag) {
    using T = decltype(tag);
    bias_relu_kernel<T><<<blocks_for(n), kThreads, 0, stream>>>(static_cast<T*>(dst), bias, channels, hw, n, relu,
                                                                 nhwc);
  });
  check_launch("bias_relu_kernel");
}

void bias_backward(const void* diff_dst, DType dtype, int64_t mb, int64_t channels, int64_t hw, bool nhwc,
                   float* diff_bia, cudaStream_t stream) {
  if (channels == 0) return;
  TS_CHECK(channels <= int64_t{2147483647}, "bias_backward: " + std::to_string(channels) + " channels exceed the grid");
  with_storage_type(dtype, "bias_backward", [&](auto tag) {
    using T = decltype(tag);
    bias_backward_kernel<T><<<static_cast<unsigned>(channels), kThreads, 0, stream>>>(static_cast<const T*>(diff_dst),
                                                                                       mb, channels, hw, nhwc,
                                                                                       diff_bia);
  });
  check_launch("bias_backward_kernel");
}

void relu6_forward(const void* src, void* dst, DType dtype, int64_t n, cudaStream_t stream) {
  if (n == 0) return;
  with_storage_type(dtype, "relu6_forward", [&](auto tag) {
    using T = decltype(tag);
    relu6_forward_kernel<T><<<blocks_for(n), kThreads, 0, stream>>>(static_cast<const T*>(src), static_cast<T*>(dst), n);
  });
  check_launch("relu6_forward_kernel");
}

void relu6_backward(const void* src, const void* diff_dst, void* diff_src, DType dtype, int64_t n,
                    cudaStream_t stream) {
  if (n == 0) return;
  with_storage_type(dtype, "relu6_backward", [&](auto tag) {
    using T = decltype(tag);
    relu6_backward_kernel<T><<<blocks_for(n), kThreads, 0, stream>>>(
        static_cast<const T*>(src), static_cast<const T*>(diff_dst), static_cast<T*>(diff_src), n);
  });
  check_launch("relu6_backward_kernel");
}

}  // namespace ts::cuda
