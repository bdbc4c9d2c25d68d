// Own kernels of the CUDA backend's cuDNN-backed ops (cuda_dnn_kernels.cu), for what cuDNN's
// legacy API has no exact or documented counterpart of: the conv bias with its fused ReLU (one
// pass, the bias read as f32 whatever the activation type), the bias gradient written as f32,
// and relu6, whose backward passes gradient strictly inside (0, 6) as ref does. Tensors are
// plain, of type f32, f16 or bf16 (`dtype`), computed in f32; every launcher only enqueues on
// `stream` and checks the launch.
#pragma once

#include <cstdint>

#include <cuda_runtime.h>

#include "backend/tensor.h"

namespace ts::cuda {

// dst (mb,channels,hw) [stored (mb,hw,channels) when nhwc] in place: dst = dst + bias[c] (bias
// null: + 0), then max(., 0) if relu.
void bias_relu_forward(void* dst, DType dtype, const float* bias, int64_t mb, int64_t channels, int64_t hw, bool relu,
                       bool nhwc, cudaStream_t stream);

// diff_bia[c] = sum over (n, s) of diff_dst (mb,channels,hw) [stored (mb,hw,channels) when nhwc],
// accumulated in f64, written as f32.
void bias_backward(const void* diff_dst, DType dtype, int64_t mb, int64_t channels, int64_t hw, bool nhwc,
                   float* diff_bia, cudaStream_t stream);

// dst = min(max(src, 0), 6) over n values.
void relu6_forward(const void* src, void* dst, DType dtype, int64_t n, cudaStream_t stream);
// diff_src = diff_dst where 0 < src < 6, else 0, over n values.
void relu6_backward(const void* src, const void* diff_dst, void* diff_src, DType dtype, int64_t n,
                    cudaStream_t stream);

}  // namespace ts::cuda
