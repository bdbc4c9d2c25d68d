// The fully connected op's own kernels (cuda_fc_kernels.cu), for what it does not leave to
// cuBLASLt: the bias and the bias gradient where cuBLASLt's epilogues are unavailable for a
// combination of data types. Row-major (rows, cols) matrices; launchers only enqueue on `stream`.
#pragma once

#include <cstdint>

#include <cuda_runtime.h>

#include "backend/tensor.h"

namespace ts::cuda {

// dst (rows, cols) of `type` += bias (cols, f32) in every row; the sum is rounded once, in f32.
void add_bias_rows(void* dst, DType type, const float* bias, int64_t rows, int64_t cols, cudaStream_t stream);

// diff_bias (cols, f32) = sum over the rows of diff_dst (rows, cols) of `type`, summed in f32 in a
// fixed order (reproducible).
void bias_gradient(const void* diff_dst, DType type, int64_t rows, int64_t cols, float* diff_bias,
                   cudaStream_t stream);

}  // namespace ts::cuda
