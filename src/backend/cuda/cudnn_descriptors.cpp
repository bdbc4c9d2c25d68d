// The owning cuDNN descriptors (cudnn_descriptors.h): how each is created and set.
#include "backend/cuda/cudnn_descriptors.h"

#include <climits>
#include <string>

#include "backend/cuda/cuda_check.h"
#include "backend/cuda/cuda_context.h"
#include "core/error.h"

namespace ts::cuda {

int cudnn_dim(int64_t value, const char* what) {
  if (value < 0 || value > INT_MAX)
    throw ConfigError(std::string("cuda backend: ") + what + " = " + std::to_string(value) +
                      " does not fit cuDNN's int dimensions (at most " + std::to_string(INT_MAX) +
                      "); use a smaller batch or layer");
  return static_cast<int>(value);
}

// ---- tensors --------------------------------------------------------------------------------
TensorDescriptor::TensorDescriptor(DType dtype, int64_t n, int64_t c, int64_t h, int64_t w, bool nhwc) {
  TS_CUDNN_CHECK(cudnnCreateTensorDescriptor(&desc_));
  const cudnnTensorFormat_t format = nhwc ? CUDNN_TENSOR_NHWC : CUDNN_TENSOR_NCHW;
  TS_CUDNN_CHECK(cudnnSetTensor4dDescriptor(desc_, format, cudnn_dtype(dtype), cudnn_dim(n, "n"), cudnn_dim(c, "c"),
                                            cudnn_dim(h, "h"), cudnn_dim(w, "w")));
}
TensorDescriptor TensorDescriptor::batchnorm_channels(const TensorDescriptor& x) {
  TensorDescriptor channels;
  TS_CUDNN_CHECK(cudnnCreateTensorDescriptor(&channels.desc_));
  TS_CUDNN_CHECK(cudnnDeriveBNTensorDescriptor(channels.desc_, x.get(), CUDNN_BATCHNORM_SPATIAL));
  return channels;
}

// ---- filters --------------------------------------------------------------------------------
FilterDescriptor::FilterDescriptor(DType dtype, int64_t k, int64_t c, int64_t h, int64_t w, bool nhwc) {
  TS_CUDNN_CHECK(cudnnCreateFilterDescriptor(&desc_));
  const cudnnTensorFormat_t format = nhwc ? CUDNN_TENSOR_NHWC : CUDNN_TENSOR_NCHW;
  TS_CUDNN_CHECK(cudnnSetFilter4dDescriptor(desc_, cudnn_dtype(dtype), format, cudnn_dim(k, "oc"),
                                            cudnn_dim(c, "ic/groups"), cudnn_dim(h, "kh"), cudnn_dim(w, "kw")));
}

// ---- convolutions ---------------------------------------------------------------------------
ConvolutionDescriptor::ConvolutionDescriptor(int64_t ph, int64_t pw, int64_t sh, int64_t sw, int64_t groups,
                                             cudnnDataType_t compute, cudnnMathType_t math) {
  TS_CUDNN_CHECK(cudnnCreateConvolutionDescriptor(&desc_));
  TS_CUDNN_CHECK(cudnnSetConvolution2dDescriptor(desc_, cudnn_dim(ph, "ph"), cudnn_dim(pw, "pw"), cudnn_dim(sh, "sh"),
                                                 cudnn_dim(sw, "sw"), 1, 1, CUDNN_CROSS_CORRELATION, compute));
  TS_CUDNN_CHECK(cudnnSetConvolutionGroupCount(desc_, cudnn_dim(groups, "groups")));
  set_math(math);
}
void ConvolutionDescriptor::set_math(cudnnMathType_t math) {
  TS_CUDNN_CHECK(cudnnSetConvolutionMathType(desc_, math));
}

// ---- pooling --------------------------------------------------------------------------------
PoolingDescriptor::PoolingDescriptor(cudnnPoolingMode_t mode, int64_t kh, int64_t kw, int64_t ph, int64_t pw,
                                     int64_t sh, int64_t sw) {
  TS_CUDNN_CHECK(cudnnCreatePoolingDescriptor(&desc_));
  TS_CUDNN_CHECK(cudnnSetPooling2dDescriptor(desc_, mode, CUDNN_PROPAGATE_NAN, cudnn_dim(kh, "kh"), cudnn_dim(kw, "kw"),
                                             cudnn_dim(ph, "ph"), cudnn_dim(pw, "pw"), cudnn_dim(sh, "sh"),
                                             cudnn_dim(sw, "sw")));
}

// ---- activations ----------------------------------------------------------------------------
ActivationDescriptor::ActivationDescriptor(cudnnActivationMode_t mode, double coef) {
  TS_CUDNN_CHECK(cudnnCreateActivationDescriptor(&desc_));
  TS_CUDNN_CHECK(cudnnSetActivationDescriptor(desc_, mode, CUDNN_PROPAGATE_NAN, coef));
}

}  // namespace ts::cuda
