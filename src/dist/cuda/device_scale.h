// dist-internal (CUDA builds): x *= factor over `count` floats of device memory, queued on
// `stream` (the mean after a CUDA-aware MPI sum, which leaves the data on the device).
#pragma once

#include <cuda_runtime.h>

#include <cstdint>

namespace ts {

void scale_on_device(float* data, int64_t count, float factor, cudaStream_t stream);

}  // namespace ts
