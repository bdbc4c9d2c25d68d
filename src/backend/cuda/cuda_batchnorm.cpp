// The planned cuDNN batch normalisation (cuda_ops.h), spatial mode: src/dst (mb,c,h,w) (or
// (mb,c) after an fc: the same bytes as (mb,c,1,1)) in the run's activation type t; scale,
// shift, mean and variance (c) stay f32 whatever t is (cuDNN's rule for f16/bf16 data).
//
// Training statistics: cuDNN writes the batch mean and the UNBIASED batch variance into its
// "running" arrays when the exponential average factor is 1, so forward_training zeroes the
// caller's mean/variance (0 * garbage could be NaN), runs with factor 1 into them, and rescales
// the variance by (m-1)/m (m = mb*h*w) to the biased variance the op contract asks for.
// cuDNN's saved mean and inverse standard deviation stay in op buffers for the backward that
// follows. A fused ReLU runs as a cuDNN activation in place on dst (its backward is the ReLU
// layer's).
//
// Layout (cuda_layout.h): 4-D tensors of tf32/fp16/bf16 runs are normalised in NHWC (cuDNN's
// NHWC descriptors), fp32 and (mb,c) tensors in NCHW; inputs in the other layout are converted
// at the op's edge by its ports. NHWC training (f16, bf16, f32 of tf32 runs) takes cuDNN's fast path,
// as PyTorch's channels_last batch norm does: cudnnBatchNormalizationForwardTrainingEx /
// BackwardEx in CUDNN_BATCHNORM_SPATIAL_PERSISTENT mode, with a workspace (the context's shared
// block) and a reserve space (op-owned) sized at plan time; it needs the forward's saved
// statistics, so the backward of an op without a forward takes the plain path. NCHW, and NHWC
// where cuDNN declines the Ex queries, use the plain calls (cudnnBatchNormalizationForwardTraining
// / Backward, SPATIAL mode; in bf16 NHWC that path ran resnet50 at 6% of the Ex path's speed).
#include <algorithm>
#include <string>

#include "backend/cuda/cuda_check.h"
#include "backend/cuda/cuda_dtype_port.h"
#include "backend/cuda/cuda_layout.h"
#include "backend/cuda/cuda_ops.h"
#include "backend/cuda/cudnn_descriptors.h"
#include "core/error.h"

namespace ts::cuda {
namespace {

constexpr cudnnBatchNormMode_t kMode = CUDNN_BATCHNORM_SPATIAL;  // as TensorDescriptor::batchnorm_channels
constexpr cudnnBatchNormMode_t kPersistent = CUDNN_BATCHNORM_SPATIAL_PERSISTENT;  // same (1,c,1,1) channel desc
constexpr cudnnBatchNormOps_t kBnOnly = CUDNN_BATCHNORM_OPS_BN;

void check_batchnorm(const BnDesc& d, const TensorDesc& src) {
  const std::string name = d.str();
  if (d.mb < 1 || d.c < 1 || d.h < 1 || d.w < 1 || !(d.eps > 0.0f))
    throw ConfigError("cuda backend: cannot plan " + name + ": sizes and eps must be positive");
  check_activation_desc(src, "batch norm " + name + " src");
  const bool four_d = src.dims == Shape{d.mb, d.c, d.h, d.w};
  const bool two_d = d.h == 1 && d.w == 1 && src.dims == Shape{d.mb, d.c};
  if (!four_d && !two_d)
    throw ConfigError("cuda backend: batch norm " + name + ": src " + src.str() + " is not " +
                      Shape{d.mb, d.c, d.h, d.w}.str() + (d.h == 1 && d.w == 1 ? " or (mb,c)" : ""));
}

class CudaBatchNormOp final : public BatchNormOp {
 public:
  CudaBatchNormOp(CudaContext& ctx, const BnDesc& d, const TensorDesc& src, const TensorDesc& dst)
      : ctx_(ctx), d_(d), name_(d.str()), t_(ctx.act_dtype()) {
    check_batchnorm(d, src);
    const LayoutId layout = preferred_layout(ctx.precision, src.dims);
    dst_ = output_desc(dst, src.dims, t_, "batch norm " + name_, layout);
    x_desc_ = TensorDescriptor(t_, d.mb, d.c, d.h, d.w, layout == kNhwcLayout);
    channel_desc_ = TensorDescriptor::batchnorm_channels(x_desc_);  // (1,c,1,1) f32
    relu_ = ActivationDescriptor(CUDNN_ACTIVATION_RELU);
    const std::string what = "batch norm " + name_;
    const TensorDesc x = layout_desc(src.dims, t_, layout);
    src_in_ = InPort(src, x, what + " src");
    dst_out_ = OutPort(x, dst_, what + " dst");
    diff_dst_in_ = InPort(dst_, x, what + " diff_dst");
    diff_src_out_ = OutPort(x, src, what + " diff_src");
    saved_mean_ = DeviceMemory(static_cast<size_t>(d.c) * sizeof(float), what + " saved mean");
    saved_inv_std_ = DeviceMemory(static_cast<size_t>(d.c) * sizeof(float), what + " saved inverse std");
    if (layout == kNhwcLayout) plan_persistent(what);  // f16, bf16, f32 (tf32 runs); cuDNN may decline
    const std::string path = !persistent_ ? ": SPATIAL"
                             : std::string(": SPATIAL_PERSISTENT (Ex") + (d.relu ? ", ReLU fused" : "") +
                                   ") ws=" + std::to_string(workspace_bytes_) + " B reserve=" +
                                   std::to_string(reserve_.bytes()) + " B";
    ctx.plan_notes.push_back(name_ + " " + dtype_name(t_) + (layout == kNhwcLayout ? " nhwc" : " nchw") + path);
  }

  // src (mb,c,h,w) -> dst, batch mean and biased variance (c) into mean/variance.
  void forward_training(const Tensor& src, const float* scale, const float* shift, const Tensor& dst,
                        float* mean, float* variance) override {
    const int64_t m = d_.mb * d_.h * d_.w;
    TS_CHECK(m > 1, "batch norm forward_training: " + name_ +
                        " has one value per channel; training needs more (a larger batch or plane)");
    const cudaStream_t stream = ctx_.stream;
    const size_t channel_bytes = static_cast<size_t>(d_.c) * sizeof(float);
    TS_CUDA_CHECK(cudaMemsetAsync(mean, 0, channel_bytes, stream));
    TS_CUDA_CHECK(cudaMemsetAsync(variance, 0, channel_bytes, stream));
    const void* x = src_in_.get(src.data, stream);
    void* y = dst_out_.target(dst.data);
    const float one = 1.0f, zero = 0.0f;
    if (persistent_)  // with a fused ReLU, cuDNN applies it in the same pass (forward_ops())
      TS_CUDNN_CHECK(cudnnBatchNormalizationForwardTrainingEx(
          ctx_.cudnn, kPersistent, forward_ops(), &one, &zero, x_desc_.get(), x, nullptr, nullptr, x_desc_.get(), y,
          channel_desc_.get(), scale, shift, /*exponentialAverageFactor=*/1.0, mean, variance, d_.eps,
          saved_mean_.get(), saved_inv_std_.get(), forward_activation(), workspace(), workspace_bytes_,
          reserve_.get(), reserve_.bytes()));
    else
      TS_CUDNN_CHECK(cudnnBatchNormalizationForwardTraining(
          ctx_.cudnn, kMode, &one, &zero, x_desc_.get(), x, x_desc_.get(), y, channel_desc_.get(), scale, shift,
          /*exponentialAverageFactor=*/1.0, mean, variance, d_.eps, saved_mean_.get(), saved_inv_std_.get()));
    const float unbiased_to_biased = static_cast<float>(m - 1) / static_cast<float>(m);
    TS_CUDNN_CHECK(cudnnScaleTensor(ctx_.cudnn, channel_desc_.get(), variance, &unbiased_to_biased));
    saved_valid_ = true;
    if (!persistent_) fused_relu(y);
    dst_out_.finish(dst.data, stream);
  }

  void forward_inference(const Tensor& src, const float* scale, const float* shift, const float* mean,
                         const float* variance, const Tensor& dst) override {
    const void* x = src_in_.get(src.data, ctx_.stream);
    void* y = dst_out_.target(dst.data);
    const float one = 1.0f, zero = 0.0f;
    TS_CUDNN_CHECK(cudnnBatchNormalizationForwardInference(ctx_.cudnn, kMode, &one, &zero, x_desc_.get(), x,
                                                           x_desc_.get(), y, channel_desc_.get(), scale, shift, mean,
                                                           variance, d_.eps));
    fused_relu(y);
    dst_out_.finish(dst.data, ctx_.stream);
  }

  // Backward of forward_training: diff_src, diff_scale, diff_shift (f32). The statistics come
  // from the forward's saved mean and inverse std (the batch statistics mean/variance hold), or,
  // when this op has not run forward_training, cuDNN recomputes them from src (plain path).
  void backward(const Tensor& src, const Tensor& diff_dst, const float* scale, const float* /*mean*/,
                const float* /*variance*/, const Tensor& diff_src, float* diff_scale, float* diff_shift) override {
    const cudaStream_t stream = ctx_.stream;
    const void* x = src_in_.get_reused(src.data, stream);
    const void* dy = diff_dst_in_.get(diff_dst.data, stream);
    void* dx = diff_src_out_.target(diff_src.data);
    const float one = 1.0f, zero = 0.0f;
    if (persistent_ && saved_valid_)
      TS_CUDNN_CHECK(cudnnBatchNormalizationBackwardEx(
          ctx_.cudnn, kPersistent, kBnOnly, &one, &zero, &one, &zero, x_desc_.get(), x, nullptr, nullptr,
          x_desc_.get(), dy, nullptr, nullptr, x_desc_.get(), dx, channel_desc_.get(), scale, nullptr, diff_scale,
          diff_shift, d_.eps, saved_mean_.get(), saved_inv_std_.get(), nullptr, workspace(), workspace_bytes_,
          reserve_.get(), reserve_.bytes()));
    else
      TS_CUDNN_CHECK(cudnnBatchNormalizationBackward(
          ctx_.cudnn, kMode, &one, &zero, &one, &zero, x_desc_.get(), x, x_desc_.get(), dy, x_desc_.get(), dx,
          channel_desc_.get(), scale, diff_scale, diff_shift, d_.eps, saved_valid_ ? saved_mean_.get() : nullptr,
          saved_valid_ ? saved_inv_std_.get() : nullptr));
    diff_src_out_.finish(diff_src.data, stream);
  }

 private:
  // The Ex path when cuDNN answers its workspace and reserve-space queries for these descs and
  // the workspace fits the context's limit; otherwise the plain path stays.
  void plan_persistent(const std::string& what) {
    size_t forward = 0, backward = 0, reserve = 0;
    const cudnnHandle_t h = ctx_.cudnn;
    const cudnnTensorDescriptor_t x = x_desc_.get(), channels = channel_desc_.get();
    if (cudnnGetBatchNormalizationForwardTrainingExWorkspaceSize(h, kPersistent, forward_ops(), x, nullptr, x,
                                                                 channels, forward_activation(),
                                                                 &forward) != CUDNN_STATUS_SUCCESS ||
        cudnnGetBatchNormalizationBackwardExWorkspaceSize(h, kPersistent, kBnOnly, x, x, x, nullptr, x, channels,
                                                          nullptr, &backward) != CUDNN_STATUS_SUCCESS ||
        cudnnGetBatchNormalizationTrainingExReserveSpaceSize(h, kPersistent, forward_ops(), forward_activation(), x,
                                                             &reserve) !=
            CUDNN_STATUS_SUCCESS)
      return;
    workspace_bytes_ = std::max(forward, backward);
    if (workspace_bytes_ > ctx_.workspace_limit) return;
    ctx_.reserve_workspace(workspace_bytes_);
    reserve_ = DeviceMemory(reserve, what + " reserve space");
    persistent_ = true;
  }

  // The Ex forward fuses the descriptor's ReLU (its backward stays the ReLU layer's, so the Ex
  // backward normalises only: CUDNN_BATCHNORM_OPS_BN).
  cudnnBatchNormOps_t forward_ops() const { return d_.relu ? CUDNN_BATCHNORM_OPS_BN_ACTIVATION : kBnOnly; }
  cudnnActivationDescriptor_t forward_activation() const { return d_.relu ? relu_.get() : nullptr; }

  // The shared workspace of the Ex path (reserved at plan time; fetched per call since a later
  // plan may have grown it).
  void* workspace() const {
    if (workspace_bytes_ == 0) return nullptr;
    TS_CHECK(ctx_.workspace_bytes() >= workspace_bytes_,
             "batch norm " + name_ + ": the CUDA workspace is smaller than reserved at plan time");
    return ctx_.workspace();
  }

  // dst (in t) = max(dst, 0) when the descriptor fuses a ReLU.
  void fused_relu(void* y) {
    if (!d_.relu) return;
    const float one = 1.0f, zero = 0.0f;
    TS_CUDNN_CHECK(cudnnActivationForward(ctx_.cudnn, relu_.get(), &one, x_desc_.get(), y, &zero, x_desc_.get(), y));
  }

  CudaContext& ctx_;
  BnDesc d_;
  std::string name_;  // the descriptor, for messages
  DType t_;           // the data type cuDNN normalises in (act_dtype() at plan time)
  TensorDescriptor x_desc_;        // src, dst and their gradients (mb,c,h,w), NCHW or NHWC
  TensorDescriptor channel_desc_;  // scale, shift, statistics (1,c,1,1) f32
  ActivationDescriptor relu_;
  InPort src_in_, diff_dst_in_;
  OutPort dst_out_, diff_src_out_;
  DeviceMemory saved_mean_, saved_inv_std_;  // cuDNN's cache of the latest forward_training (c)
  bool saved_valid_ = false;
  bool persistent_ = false;     // the Ex path (SPATIAL_PERSISTENT) runs training
  size_t workspace_bytes_ = 0;  // the Ex path's workspace (the larger of forward and backward)
  DeviceMemory reserve_;        // the Ex path's reserve space, from forward_training to backward
};

}  // namespace

std::unique_ptr<BatchNormOp> plan_batchnorm(CudaContext& ctx, const BnDesc& d, const TensorDesc& src,
                                            const TensorDesc& dst) {
  return std::make_unique<CudaBatchNormOp>(ctx, d, src, dst);
}

}  // namespace ts::cuda
