// See device_scale.h.
#include "dist/cuda/device_scale.h"

#include <algorithm>

#include "dist/cuda/device_check.h"

namespace ts {
namespace {

__global__ void scale_kernel(float* data, int64_t count, float factor) {
  const int64_t stride = static_cast<int64_t>(gridDim.x) * blockDim.x;
  for (int64_t i = static_cast<int64_t>(blockIdx.x) * blockDim.x + threadIdx.x; i < count; i += stride)
    data[i] *= factor;
}

__global__ void add_kernel(float* dst, const float* src, int64_t count) {
  const int64_t stride = static_cast<int64_t>(gridDim.x) * blockDim.x;
  for (int64_t i = static_cast<int64_t>(blockIdx.x) * blockDim.x + threadIdx.x; i < count; i += stride)
    dst[i] += src[i];
}

constexpr int kThreads = 256;

unsigned blocks_for(int64_t count) {
  return static_cast<unsigned>(std::min<int64_t>((count + kThreads - 1) / kThreads, 4096));
}

}  // namespace

void scale_on_device(float* data, int64_t count, float factor, cudaStream_t stream) {
  if (count <= 0) return;
  scale_kernel<<<blocks_for(count), kThreads, 0, stream>>>(data, count, factor);
  TS_DIST_CUDA(cudaGetLastError());
}

void add_on_device(float* dst, const float* src, int64_t count, cudaStream_t stream) {
  if (count <= 0) return;
  add_kernel<<<blocks_for(count), kThreads, 0, stream>>>(dst, src, count);
  TS_DIST_CUDA(cudaGetLastError());
}

}  // namespace ts
