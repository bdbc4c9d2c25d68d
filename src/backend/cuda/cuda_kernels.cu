// The CUDA backend's own element-wise kernels (cuda_kernels.h): data type conversion and the
// arena-wide optimizer and statistics ops. Grid-stride loops over n values; every launcher only
// enqueues on its stream and checks the launch.
//
// sgd_step and axpby compute in double with explicitly rounded operations (no fused
// multiply-add), the same arithmetic as the ref backend's kernels (ref_kernels.cpp), so the
// device and the oracle agree bit for bit. They are memory-bound; double costs nothing visible.
#include "backend/cuda/cuda_kernels.h"

#include <cuda_bf16.h>
#include <cuda_fp16.h>

#include <algorithm>
#include <string>

#include "backend/cuda/cuda_check.h"
#include "backend/cuda/cuda_element.cuh"
#include "core/error.h"

namespace ts::cuda {
namespace {

constexpr int kBlock = 256;
// Enough blocks to fill any current GPU several times over; the loops stride over the rest.
constexpr int64_t kMaxBlocks = 4096;

int blocks_for(int64_t n) { return static_cast<int>(std::min<int64_t>((n + kBlock - 1) / kBlock, kMaxBlocks)); }

template <typename Src, typename Dst>
__global__ void convert_kernel(const Src* src, Dst* dst, int64_t n) {
  for (int64_t i = blockIdx.x * int64_t(blockDim.x) + threadIdx.x; i < n; i += int64_t(gridDim.x) * blockDim.x)
    store_from_float(dst, i, load_as_float(src, i));  // exact for f16 and bf16; rounds to nearest even
}

template <typename Src>
void launch_convert_from(const Src* src, void* dst, DType dst_type, int64_t n, cudaStream_t stream) {
  switch (dst_type) {
    case DType::f32: convert_kernel<<<blocks_for(n), kBlock, 0, stream>>>(src, static_cast<float*>(dst), n); return;
    case DType::f16: convert_kernel<<<blocks_for(n), kBlock, 0, stream>>>(src, static_cast<__half*>(dst), n); return;
    case DType::bf16:
      convert_kernel<<<blocks_for(n), kBlock, 0, stream>>>(src, static_cast<__nv_bfloat16*>(dst), n);
      return;
    default: break;
  }
  throw RuntimeError(std::string("cuda::convert: cannot convert to ") + dtype_name(dst_type) +
                     " (f32, f16 and bf16 convert into each other; other types only copy to themselves)");
}

//   g' = g + wd * w;  v = momentum * v + g';  w -= lr * (nesterov ? g' + momentum * v : v)
__global__ void sgd_step_kernel(int64_t n, double lr, double momentum, double weight_decay, bool nesterov,
                                float* weights, const float* grads, float* velocity, const int32_t* skip) {
  if (skip && *skip != 0) return;  // loss scaling found a non-finite gradient this step
  for (int64_t i = blockIdx.x * int64_t(blockDim.x) + threadIdx.x; i < n; i += int64_t(gridDim.x) * blockDim.x) {
    const double w = weights[i];
    const double g = __dadd_rn(double(grads[i]), __dmul_rn(weight_decay, w));
    const double v = __dadd_rn(__dmul_rn(momentum, double(velocity[i])), g);
    velocity[i] = static_cast<float>(v);
    const double step = nesterov ? __dadd_rn(g, __dmul_rn(momentum, v)) : v;
    weights[i] = static_cast<float>(__dsub_rn(w, __dmul_rn(lr, step)));
  }
}

// y = a x + b y
__global__ void axpby_kernel(int64_t n, double a, const float* x, double b, float* y) {
  for (int64_t i = blockIdx.x * int64_t(blockDim.x) + threadIdx.x; i < n; i += int64_t(gridDim.x) * blockDim.x)
    y[i] = static_cast<float>(__dadd_rn(__dmul_rn(a, double(x[i])), __dmul_rn(b, double(y[i]))));
}

// x *= a (in f32, as the CPU backends do), or with a = 1 / *scale when scale is given (divided as
// the host divides: IEEE, round to nearest); *nonfinite = 1 when some x was inf/NaN before scaling.
__global__ void scale_check_kernel(int64_t n, float a, const float* scale, float* x, int* nonfinite) {
  if (scale) a = __fdiv_rn(1.0f, *scale);
  bool finite = true;
  for (int64_t i = blockIdx.x * int64_t(blockDim.x) + threadIdx.x; i < n; i += int64_t(gridDim.x) * blockDim.x) {
    const float v = x[i];
    finite &= isfinite(v);
    x[i] = __fmul_rn(v, a);
  }
  if (!finite) *nonfinite = 1;  // every writer writes the same value: no atomic needed
}

__global__ void update_loss_scale_kernel(LossScaleState* state, LossScaleRule rule) {
  apply_loss_scale_rule(*state, rule);
}

}  // namespace

void convert(const void* src, DType src_type, void* dst, DType dst_type, int64_t n, cudaStream_t stream) {
  if (n <= 0) return;
  if (src_type == dst_type) {
    TS_CUDA_CHECK(cudaMemcpyAsync(dst, src, static_cast<size_t>(n) * dtype_bytes(src_type), cudaMemcpyDeviceToDevice,
                                  stream));
    return;
  }
  switch (src_type) {
    case DType::f32: launch_convert_from(static_cast<const float*>(src), dst, dst_type, n, stream); break;
    case DType::f16: launch_convert_from(static_cast<const __half*>(src), dst, dst_type, n, stream); break;
    case DType::bf16: launch_convert_from(static_cast<const __nv_bfloat16*>(src), dst, dst_type, n, stream); break;
    default:
      throw RuntimeError(std::string("cuda::convert: cannot convert from ") + dtype_name(src_type) + " to " +
                         dtype_name(dst_type) + " (f32, f16 and bf16 convert into each other)");
  }
  TS_CUDA_CHECK(cudaGetLastError());
}

void sgd_step(int64_t n, float lr, float momentum, float weight_decay, bool nesterov, float* weights,
              const float* grads, float* velocity, cudaStream_t stream, const int32_t* skip) {
  if (n <= 0) return;
  sgd_step_kernel<<<blocks_for(n), kBlock, 0, stream>>>(n, lr, momentum, weight_decay, nesterov, weights, grads,
                                                        velocity, skip);
  TS_CUDA_CHECK(cudaGetLastError());
}

void axpby(int64_t n, float a, const float* x, float b, float* y, cudaStream_t stream) {
  if (n <= 0) return;
  axpby_kernel<<<blocks_for(n), kBlock, 0, stream>>>(n, a, x, b, y);
  TS_CUDA_CHECK(cudaGetLastError());
}

void scale_check_finite(int64_t n, float a, float* x, int* nonfinite, cudaStream_t stream) {
  if (n <= 0) return;
  scale_check_kernel<<<blocks_for(n), kBlock, 0, stream>>>(n, a, nullptr, x, nonfinite);
  TS_CUDA_CHECK(cudaGetLastError());
}

void unscale_check(int64_t n, LossScaleState* state, float* x, cudaStream_t stream) {
  TS_CUDA_CHECK(cudaMemsetAsync(&state->nonfinite, 0, sizeof(state->nonfinite), stream));
  if (n <= 0) return;
  scale_check_kernel<<<blocks_for(n), kBlock, 0, stream>>>(n, 1.0f, &state->scale, x, &state->nonfinite);
  TS_CUDA_CHECK(cudaGetLastError());
}

void update_loss_scale(LossScaleState* state, const LossScaleRule& rule, cudaStream_t stream) {
  update_loss_scale_kernel<<<1, 1, 0, stream>>>(state, rule);
  TS_CUDA_CHECK(cudaGetLastError());
}

}  // namespace ts::cuda
