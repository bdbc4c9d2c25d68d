// The planned cuDNN pooling (cuda_ops.h): src (mb,c,ih,iw) -> dst (mb,c,oh,ow) in the run's
// activation type t. Max pooling is CUDNN_POOLING_MAX (padding never wins; with cuda.algorithms
// deterministic CUDNN_POOLING_MAX_DETERMINISTIC, whose backward over overlapping windows is
// bit-reproducible), average pooling
// CUDNN_POOLING_AVERAGE_COUNT_EXCLUDE_PADDING (PoolDesc's average excludes padding); a global
// average pool is the window covering the whole plane. cuDNN's backward recomputes the argmax
// from src and dst instead of keeping indices, so workspace_bytes() is 0 and the op keeps the
// latest forward's src and dst (in t), which ops.h guarantees unchanged until its backward.
// Layout (cuda_layout.h): tf32/fp16/bf16 runs pool in NHWC, fp32 in NCHW; inputs in the other
// layout are converted at the op's edge by its ports.
#include <string>

#include "backend/cuda/cuda_check.h"
#include "backend/cuda/cuda_dtype_port.h"
#include "backend/cuda/cuda_layout.h"
#include "backend/cuda/cuda_ops.h"
#include "backend/cuda/cudnn_descriptors.h"
#include "core/error.h"

namespace ts::cuda {
namespace {

void check_pool(const PoolDesc& d, const TensorDesc& src) {
  const std::string name = d.str();
  if (d.mb < 1 || d.c < 1 || d.kh < 1 || d.kw < 1 || d.sh < 1 || d.sw < 1 || d.ph < 0 || d.pw < 0 || d.oh() < 1 ||
      d.ow() < 1 || d.ph >= d.kh || d.pw >= d.kw)
    throw ConfigError("cuda backend: cannot plan " + name +
                      ": sizes and strides must be positive, padding non-negative and smaller than the window, and "
                      "the output non-empty");
  check_activation_desc(src, "pool " + name + " src");
  const Shape dims{d.mb, d.c, d.ih, d.iw};
  if (src.dims != dims) throw ConfigError("cuda backend: pool " + name + ": src " + src.str() + " is not " + dims.str());
}

class CudaPoolOp final : public PoolOp {
 public:
  CudaPoolOp(CudaContext& ctx, const PoolDesc& d, const TensorDesc& src, const TensorDesc& dst)
      : ctx_(ctx), d_(d), name_(d.str()), t_(ctx.act_dtype()) {
    check_pool(d, src);
    const Shape dst_dims{d.mb, d.c, d.oh(), d.ow()};
    const LayoutId layout = preferred_layout(ctx.precision, src.dims);
    const bool nhwc = layout == kNhwcLayout;
    dst_ = output_desc(dst, dst_dims, t_, "pool " + name_, layout);
    const cudnnPoolingMode_t max_mode = ctx.algorithm_choice == AlgorithmChoice::deterministic
                                            ? CUDNN_POOLING_MAX_DETERMINISTIC
                                            : CUDNN_POOLING_MAX;
    const cudnnPoolingMode_t mode = d.kind == PoolKind::max ? max_mode : CUDNN_POOLING_AVERAGE_COUNT_EXCLUDE_PADDING;
    pool_ = PoolingDescriptor(mode, d.kh, d.kw, d.ph, d.pw, d.sh, d.sw);
    x_desc_ = TensorDescriptor(t_, d.mb, d.c, d.ih, d.iw, nhwc);
    y_desc_ = TensorDescriptor(t_, d.mb, d.c, d.oh(), d.ow(), nhwc);
    int n = 0, c = 0, h = 0, w = 0;  // cuDNN's output size must be PoolDesc's
    TS_CUDNN_CHECK(cudnnGetPooling2dForwardOutputDim(pool_.get(), x_desc_.get(), &n, &c, &h, &w));
    TS_CHECK(n == d.mb && c == d.c && h == d.oh() && w == d.ow(),
             "pool " + name_ + ": cuDNN computes an output of (" + std::to_string(n) + "," + std::to_string(c) + "," +
                 std::to_string(h) + "," + std::to_string(w) + "), not " + dst_dims.str());
    const std::string what = "pool " + name_;
    const TensorDesc x = layout_desc(src.dims, t_, layout), y = layout_desc(dst_dims, t_, layout);
    src_in_ = InPort(src, x, what + " src");
    dst_out_ = OutPort(y, dst_, what + " dst");
    diff_dst_in_ = InPort(dst_, y, what + " diff_dst");
    diff_src_out_ = OutPort(x, src, what + " diff_src");
  }

  size_t workspace_bytes() const override { return 0; }

  // src (mb,c,ih,iw) -> dst (mb,c,oh,ow); `workspace` is not used (0 bytes).
  void forward(const Tensor& src, const Tensor& dst, void* /*workspace*/) override {
    const float one = 1.0f, zero = 0.0f;
    x_ = src_in_.get(src.data, ctx_.stream);
    void* y = dst_out_.target(dst.data);
    TS_CUDNN_CHECK(cudnnPoolingForward(ctx_.cudnn, pool_.get(), &one, x_desc_.get(), x_, &zero, y_desc_.get(), y));
    y_ = y;  // the port's buffer keeps t's copy when dst is of another type
    dst_out_.finish(dst.data, ctx_.stream);
  }

  // diff_dst (mb,c,oh,ow) -> diff_src (mb,c,ih,iw), from the latest forward's src and dst.
  void backward(const Tensor& diff_dst, const void* /*workspace*/, const Tensor& diff_src) override {
    TS_CHECK(x_ && y_, "pool backward: " + name_ + " has not run forward; its backward reads the forward's src and dst");
    const float one = 1.0f, zero = 0.0f;
    const void* dy = diff_dst_in_.get(diff_dst.data, ctx_.stream);
    void* dx = diff_src_out_.target(diff_src.data);
    TS_CUDNN_CHECK(cudnnPoolingBackward(ctx_.cudnn, pool_.get(), &one, y_desc_.get(), y_, y_desc_.get(), dy,
                                        x_desc_.get(), x_, &zero, x_desc_.get(), dx));
    diff_src_out_.finish(diff_src.data, ctx_.stream);
  }

 private:
  CudaContext& ctx_;
  PoolDesc d_;
  std::string name_;  // the descriptor, for messages
  DType t_;           // the type cuDNN pools in (act_dtype() at plan time)
  PoolingDescriptor pool_;
  TensorDescriptor x_desc_, y_desc_;
  InPort src_in_, diff_dst_in_;
  OutPort dst_out_, diff_src_out_;
  const void* x_ = nullptr;  // the latest forward's src and dst in t
  const void* y_ = nullptr;
};

}  // namespace

std::unique_ptr<PoolOp> plan_pool(CudaContext& ctx, const PoolDesc& d, const TensorDesc& src, const TensorDesc& dst) {
  return std::make_unique<CudaPoolOp>(ctx, d, src, dst);
}

}  // namespace ts::cuda
