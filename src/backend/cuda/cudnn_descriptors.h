// Owning wrappers of the cuDNN legacy descriptors the CUDA backend's ops plan with (conv, pool,
// batch norm, activations): each is created and set in its constructor (every status checked)
// and destroyed with its owner. Tensors are packed NCHW or NHWC (logical dims (n,c,h,w) in
// both, cuda_layout.h); cuDNN's legacy API takes int
// dimensions, so a dimension above INT_MAX is a planning error.
#pragma once

#include <cstdint>
#include <utility>

#include <cudnn.h>

#include "backend/tensor.h"

namespace ts::cuda {

// Moves a cuDNN handle of type T out of `from`, leaving null behind (shared by the wrappers).
template <typename T>
T take(T& from) {
  return std::exchange(from, nullptr);
}

// A packed tensor (n,c,h,w) of `dtype`, stored NCHW, or NHWC when `nhwc`.
class TensorDescriptor {
 public:
  TensorDescriptor() = default;
  TensorDescriptor(DType dtype, int64_t n, int64_t c, int64_t h, int64_t w, bool nhwc = false);
  ~TensorDescriptor();
  TensorDescriptor(TensorDescriptor&& o) noexcept : desc_(take(o.desc_)) {}
  TensorDescriptor& operator=(TensorDescriptor&& o) noexcept;
  cudnnTensorDescriptor_t get() const { return desc_; }
  // Batch norm's per-channel tensors (scale, shift, statistics) for data `x` in spatial mode:
  // (1,c,1,1), f32 for f32/f16/bf16 data.
  static TensorDescriptor batchnorm_channels(const TensorDescriptor& x);

 private:
  cudnnTensorDescriptor_t desc_ = nullptr;
};

// Convolution weights (k, c, h, w) of `dtype`: wei (oc, ic/groups, kh, kw) stored NCHW (KCRS),
// or (oc, kh, kw, ic/groups) when `nhwc` (KRSC, what NHWC convolutions take).
class FilterDescriptor {
 public:
  FilterDescriptor() = default;
  FilterDescriptor(DType dtype, int64_t k, int64_t c, int64_t h, int64_t w, bool nhwc = false);
  ~FilterDescriptor();
  FilterDescriptor(FilterDescriptor&& o) noexcept : desc_(take(o.desc_)) {}
  FilterDescriptor& operator=(FilterDescriptor&& o) noexcept;
  cudnnFilterDescriptor_t get() const { return desc_; }

 private:
  cudnnFilterDescriptor_t desc_ = nullptr;
};

// A 2-D cross-correlation (what ConvDesc means) with symmetric padding, no dilation, `groups`,
// accumulating in `compute` and running with `math`.
class ConvolutionDescriptor {
 public:
  ConvolutionDescriptor() = default;
  ConvolutionDescriptor(int64_t ph, int64_t pw, int64_t sh, int64_t sw, int64_t groups,
                        cudnnDataType_t compute, cudnnMathType_t math);
  ~ConvolutionDescriptor();
  ConvolutionDescriptor(ConvolutionDescriptor&& o) noexcept : desc_(take(o.desc_)) {}
  ConvolutionDescriptor& operator=(ConvolutionDescriptor&& o) noexcept;
  cudnnConvolutionDescriptor_t get() const { return desc_; }
  // The math type the chosen algorithm of one direction runs with.
  void set_math(cudnnMathType_t math);

 private:
  cudnnConvolutionDescriptor_t desc_ = nullptr;
};

// A 2-D pooling window (kh,kw), symmetric padding (ph,pw), stride (sh,sw).
class PoolingDescriptor {
 public:
  PoolingDescriptor() = default;
  PoolingDescriptor(cudnnPoolingMode_t mode, int64_t kh, int64_t kw, int64_t ph, int64_t pw, int64_t sh,
                    int64_t sw);
  ~PoolingDescriptor();
  PoolingDescriptor(PoolingDescriptor&& o) noexcept : desc_(take(o.desc_)) {}
  PoolingDescriptor& operator=(PoolingDescriptor&& o) noexcept;
  cudnnPoolingDescriptor_t get() const { return desc_; }

 private:
  cudnnPoolingDescriptor_t desc_ = nullptr;
};

// An activation (relu, sigmoid, clipped relu with ceiling `coef`); NaNs propagate.
class ActivationDescriptor {
 public:
  ActivationDescriptor() = default;
  explicit ActivationDescriptor(cudnnActivationMode_t mode, double coef = 0.0);
  ~ActivationDescriptor();
  ActivationDescriptor(ActivationDescriptor&& o) noexcept : desc_(take(o.desc_)) {}
  ActivationDescriptor& operator=(ActivationDescriptor&& o) noexcept;
  cudnnActivationDescriptor_t get() const { return desc_; }

 private:
  cudnnActivationDescriptor_t desc_ = nullptr;
};

// A cuDNN int dimension from a descriptor's int64 one; throws ConfigError naming `what` when it
// does not fit.
int cudnn_dim(int64_t value, const char* what);

}  // namespace ts::cuda
