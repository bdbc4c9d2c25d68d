// dist-internal (CUDA builds): elementwise kernels of the exchanges on device memory: x *= factor
// (the mean after a CUDA-aware MPI sum, which leaves the data on the device), and dst += src.
#pragma once

#include <cuda_runtime.h>

#include <cstdint>

namespace ts {

void scale_on_device(float* data, int64_t count, float factor, cudaStream_t stream);
// dst += src over `count` floats of device memory, queued on `stream` (dist.hetero_allreduce
// device: a host rank's bucket, copied to the GPU, added into the GPU rank's gradients).
void add_on_device(float* dst, const float* src, int64_t count, cudaStream_t stream);

}  // namespace ts
