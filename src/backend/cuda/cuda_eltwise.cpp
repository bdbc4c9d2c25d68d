// The planned element-wise activations (cuda_ops.h), src -> dst of the same shape in the run's
// activation type t. relu and sigmoid are cuDNN activations, whose formulas are ref's exactly
// (relu: max(x, 0), gradient where x > 0; sigmoid: 1 / (1 + exp(-x)), gradient dy y (1 - y)).
// relu6 is an own kernel (cuda_dnn_kernels.h): cuDNN's clipped ReLU does not document which
// side of the clip its gradient takes, and ref passes gradient strictly inside (0, 6).
// Element-wise, so layout-blind: the op computes in src's layout (plain or NHWC, cuda_layout.h),
// and an output requested "any" gets it; cuDNN sees the values as (n,c,h,w) NCHW either way.
#include <string>

#include "backend/cuda/cuda_check.h"
#include "backend/cuda/cuda_dnn_kernels.h"
#include "backend/cuda/cuda_dtype_port.h"
#include "backend/cuda/cuda_layout.h"
#include "backend/cuda/cuda_ops.h"
#include "backend/cuda/cudnn_descriptors.h"
#include "core/error.h"

namespace ts::cuda {
namespace {

// cuDNN's view of n values: the tensor's own dims when it is 4-D, else one row (1,1,1,n).
TensorDescriptor flat_descriptor(DType t, const TensorDesc& src) {
  const Shape& s = src.dims;
  if (s.rank() == 4) return TensorDescriptor(t, s[0], s[1], s[2], s[3]);
  return TensorDescriptor(t, 1, 1, 1, src.numel());
}

class CudaEltwiseOp final : public EltwiseOp {
 public:
  CudaEltwiseOp(CudaContext& ctx, const EltwiseDesc& d, const TensorDesc& src, const TensorDesc& dst)
      : ctx_(ctx), d_(d), name_(d.str()), t_(ctx.act_dtype()) {
    const std::string what = "eltwise " + name_;
    check_activation_desc(src, what + " src");
    if (src.numel() != d.n)
      throw ConfigError("cuda backend: " + what + ": src " + src.str() + " holds " + std::to_string(src.numel()) +
                        " values, not " + std::to_string(d.n));
    dst_ = output_desc(dst, src.dims, t_, what, src.layout);
    if (uses_cudnn()) {
      desc_ = flat_descriptor(t_, src);
      activation_ = ActivationDescriptor(d.kind == EltwiseKind::relu ? CUDNN_ACTIVATION_RELU : CUDNN_ACTIVATION_SIGMOID);
    }
    const TensorDesc x = layout_desc(src.dims, t_, src.layout);  // dst has src's dims
    src_in_ = InPort(src, x, what + " src");
    dst_out_ = OutPort(x, dst_, what + " dst");
    dst_in_ = InPort(dst_, x, what + " dst (backward)");
    diff_dst_in_ = InPort(dst_, x, what + " diff_dst");
    diff_src_out_ = OutPort(x, src, what + " diff_src");
  }

  void forward(const Tensor& src, const Tensor& dst) override {
    const void* x = src_in_.get(src.data, ctx_.stream);
    void* y = dst_out_.target(dst.data);
    if (uses_cudnn()) {
      const float one = 1.0f, zero = 0.0f;
      TS_CUDNN_CHECK(cudnnActivationForward(ctx_.cudnn, activation_.get(), &one, desc_.get(), x, &zero, desc_.get(), y));
    } else {
      relu6_forward(x, y, t_, d_.n, ctx_.stream);
    }
    dst_out_.finish(dst.data, ctx_.stream);
  }

  // diff_src from the forward's src and dst and diff_dst (dst's desc).
  void backward(const Tensor& src, const Tensor& dst, const Tensor& diff_dst, const Tensor& diff_src) override {
    const void* x = src_in_.get_reused(src.data, ctx_.stream);
    const void* dy = diff_dst_in_.get(diff_dst.data, ctx_.stream);
    void* dx = diff_src_out_.target(diff_src.data);
    if (uses_cudnn()) {
      const void* y = dst_in_.get(dst.data, ctx_.stream);
      const float one = 1.0f, zero = 0.0f;
      TS_CUDNN_CHECK(cudnnActivationBackward(ctx_.cudnn, activation_.get(), &one, desc_.get(), y, desc_.get(), dy,
                                             desc_.get(), x, &zero, desc_.get(), dx));
    } else {
      relu6_backward(x, dy, dx, t_, d_.n, ctx_.stream);
    }
    diff_src_out_.finish(diff_src.data, ctx_.stream);
  }

 private:
  bool uses_cudnn() const { return d_.kind != EltwiseKind::relu6; }

  CudaContext& ctx_;
  EltwiseDesc d_;
  std::string name_;  // the descriptor, for messages
  DType t_;           // the type the activation runs in (act_dtype() at plan time)
  TensorDescriptor desc_;  // src, dst and their gradients, for cuDNN
  ActivationDescriptor activation_;
  InPort src_in_, dst_in_, diff_dst_in_;
  OutPort dst_out_, diff_src_out_;
};

}  // namespace

std::unique_ptr<EltwiseOp> plan_eltwise(CudaContext& ctx, const EltwiseDesc& d, const TensorDesc& src,
                                        const TensorDesc& dst) {
  return std::make_unique<CudaEltwiseOp>(ctx, d, src, dst);
}

}  // namespace ts::cuda
