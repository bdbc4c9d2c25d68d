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

}  // namespace

void scale_on_device(float* data, int64_t count, float factor, cudaStream_t stream) {
  if (count <= 0) return;
  constexpr int kThreads = 256;
  const int64_t blocks = std::min<int64_t>((count + kThreads - 1) / kThreads, 4096);
  scale_kernel<<<static_cast<unsigned>(blocks), kThreads, 0, stream>>>(data, count, factor);
  TS_DIST_CUDA(cudaGetLastError());
}

}  // namespace ts
