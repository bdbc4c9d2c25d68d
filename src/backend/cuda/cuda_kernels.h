// The CUDA backend's own kernels (cuda_kernels.cu): element-wise conversions and the arena-wide
// optimizer and statistics ops. Every launcher only enqueues on `stream`.
#pragma once

#include <cstdint>

#include <cuda_runtime.h>

#include "backend/loss_scale_state.h"
#include "backend/tensor.h"

namespace ts::cuda {

// dst[i] = src[i] converted, n values; f32 <-> f16 <-> bf16 (same type: a copy).
void convert(const void* src, DType src_type, void* dst, DType dst_type, int64_t n, cudaStream_t stream);

// SGD with momentum, Nesterov and weight decay over n params (Backend::sgd_step's formula);
// nothing when `skip` (device memory, may be null) holds a non-zero value.
void sgd_step(int64_t n, float lr, float momentum, float weight_decay, bool nesterov, float* weights,
              const float* grads, float* velocity, cudaStream_t stream, const int32_t* skip = nullptr);
// y = a x + b y.
void axpby(int64_t n, float a, const float* x, float b, float* y, cudaStream_t stream);
// x *= a; *nonfinite (device int) set to 1 if some x was inf/NaN before scaling (never cleared here).
void scale_check_finite(int64_t n, float a, float* x, int* nonfinite, cudaStream_t stream);
// Loss scaling decided on the device (DeviceLossScaling::unscale_check, update_loss_scale): x *= 1 / the
// state's scale with state->nonfinite set from x (cleared first); the state's rule.
void unscale_check(int64_t n, LossScaleState* state, float* x, cudaStream_t stream);
void update_loss_scale(LossScaleState* state, const LossScaleRule& rule, cudaStream_t stream);

}  // namespace ts::cuda
