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

// The ownership half the wrappers share: one descriptor of handle type T, destroyed with
// Destroy, move-only (a moved-from wrapper holds null). The subclass's constructor creates and
// sets desc_.
template <typename T, cudnnStatus_t (*Destroy)(T)>
class OwnedDescriptor {
 public:
  OwnedDescriptor() = default;
  ~OwnedDescriptor() {
    if (desc_) Destroy(desc_);  // a failed destroy leaks a few bytes; a destructor must not throw
  }
  OwnedDescriptor(OwnedDescriptor&& o) noexcept : desc_(std::exchange(o.desc_, nullptr)) {}
  OwnedDescriptor& operator=(OwnedDescriptor&& o) noexcept {
    if (this != &o) {
      if (desc_) Destroy(desc_);
      desc_ = std::exchange(o.desc_, nullptr);
    }
    return *this;
  }
  T get() const { return desc_; }

 protected:
  T desc_ = nullptr;
};

// A packed tensor (n,c,h,w) of `dtype`, stored NCHW, or NHWC when `nhwc`.
class TensorDescriptor : public OwnedDescriptor<cudnnTensorDescriptor_t, cudnnDestroyTensorDescriptor> {
 public:
  TensorDescriptor() = default;
  TensorDescriptor(DType dtype, int64_t n, int64_t c, int64_t h, int64_t w, bool nhwc = false);
  // Batch norm's per-channel tensors (scale, shift, statistics) for data `x` in spatial mode:
  // (1,c,1,1), f32 for f32/f16/bf16 data.
  static TensorDescriptor batchnorm_channels(const TensorDescriptor& x);
};

// Convolution weights (k, c, h, w) of `dtype`: wei (oc, ic/groups, kh, kw) stored NCHW (KCRS),
// or (oc, kh, kw, ic/groups) when `nhwc` (KRSC, what NHWC convolutions take).
class FilterDescriptor : public OwnedDescriptor<cudnnFilterDescriptor_t, cudnnDestroyFilterDescriptor> {
 public:
  FilterDescriptor() = default;
  FilterDescriptor(DType dtype, int64_t k, int64_t c, int64_t h, int64_t w, bool nhwc = false);
};

// A 2-D cross-correlation (what ConvDesc means) with symmetric padding, no dilation, `groups`,
// accumulating in `compute` and running with `math`.
class ConvolutionDescriptor : public OwnedDescriptor<cudnnConvolutionDescriptor_t, cudnnDestroyConvolutionDescriptor> {
 public:
  ConvolutionDescriptor() = default;
  ConvolutionDescriptor(int64_t ph, int64_t pw, int64_t sh, int64_t sw, int64_t groups,
                        cudnnDataType_t compute, cudnnMathType_t math);
  // The math type the chosen algorithm of one direction runs with.
  void set_math(cudnnMathType_t math);
};

// A 2-D pooling window (kh,kw), symmetric padding (ph,pw), stride (sh,sw).
class PoolingDescriptor : public OwnedDescriptor<cudnnPoolingDescriptor_t, cudnnDestroyPoolingDescriptor> {
 public:
  PoolingDescriptor() = default;
  PoolingDescriptor(cudnnPoolingMode_t mode, int64_t kh, int64_t kw, int64_t ph, int64_t pw, int64_t sh,
                    int64_t sw);
};

// An activation (relu, sigmoid, clipped relu with ceiling `coef`); NaNs propagate.
class ActivationDescriptor : public OwnedDescriptor<cudnnActivationDescriptor_t, cudnnDestroyActivationDescriptor> {
 public:
  ActivationDescriptor() = default;
  explicit ActivationDescriptor(cudnnActivationMode_t mode, double coef = 0.0);
};

// A cuDNN int dimension from a descriptor's int64 one; throws ConfigError naming `what` when it
// does not fit.
int cudnn_dim(int64_t value, const char* what);

}  // namespace ts::cuda
