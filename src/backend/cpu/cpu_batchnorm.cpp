// The planned oneDNN batch normalisation (cpu_ops.h), in its input's layout and data type:
// training forward (batch statistics; a fused ReLU through fuse_norm_relu, whose workspace the
// op owns), inference forward (given statistics) and backward (hinted by a training forward
// without the ReLU, whose backward the ReLU layer runs). Scale, shift and statistics are fp32.
#include <vector>

#include "backend/cpu/cpu_ops.h"

namespace ts::cpu {
namespace {

using Flags = dnnl::normalization_flags;

class CpuBatchNormOp final : public BatchNormOp {
 public:
  CpuBatchNormOp(CpuContext& ctx, const BnDesc& d, const TensorDesc& src, const TensorDesc& dst)
      : ctx_(ctx), d_(d), name_(d.str()), zero_shift_(static_cast<size_t>(d.c), 0.0f) {
    // A (mb, c) input (batch norm after an fc) is the same bytes as (mb, c, 1, 1).
    md_ = ctx.md(src);
    if (md_.dims().size() == 2) md_ = reshaped(md_, {d.mb, d.c, 1, 1});
    TS_CHECK(md_.dims() == memory::dims({d.mb, d.c, d.h, d.w}), "batch norm " + d.str() + ": input " + src.str());
    const std::string key = ctx.prefix() + d.str() + "/" + md_key(md_);
    train_ = ctx.primitive<dnnl::batch_normalization_forward>(key + "/train", [&] { return forward_pd(true, d.relu); });
    infer_ = ctx.primitive<dnnl::batch_normalization_forward>(key + "/infer", [&] { return forward_pd(false, d.relu); });
    const auto hint = d.relu ? ctx.primitive<dnnl::batch_normalization_forward>(key + "/train_norelu",
                                                                                 [&] { return forward_pd(true, false); })
                             : train_;
    bwd_ = ctx.primitive<dnnl::batch_normalization_backward>(key + "/bwd", [&] {
      dnnl::batch_normalization_backward::desc desc(dnnl::prop_kind::backward, md_, md_, d.eps,
                                                    Flags::use_scale | Flags::use_shift);
      return dnnl::batch_normalization_backward::primitive_desc(desc, ctx.attr(), ctx.engine, hint.pd);
    });
    if (d.relu) workspace_.resize(train_.pd.workspace_desc().get_size());
    TS_CHECK(dst.is_any() || dst == src, "batch norm " + d.str() + " writes in its input's desc " + src.str() +
                                             ", not " + dst.str());
    dst_ = src;
  }

  void forward_training(const Tensor& src, const float* scale, const float* shift, const Tensor& dst,
                        float* mean, float* variance) override {
    guarded(__FILE__, __LINE__, "batch norm forward_training", name_, [&] {
      Args args = common(src, scale, shift, mean, variance);
      args.emplace(DNNL_ARG_DST, ctx_.wrap(md_, dst.data));
      // fuse_norm_relu records its ReLU mask; the ReLU layer's backward reads dst instead.
      if (d_.relu) args.emplace(DNNL_ARG_WORKSPACE, ctx_.wrap(train_.pd.workspace_desc(), workspace_.data()));
      ctx_.run(train_.prim, train_.pd.scratchpad_desc(), std::move(args));
    });
  }

  void forward_inference(const Tensor& src, const float* scale, const float* shift, const float* mean,
                         const float* variance, const Tensor& dst) override {
    guarded(__FILE__, __LINE__, "batch norm forward_inference", name_, [&] {
      Args args = common(src, scale, shift, mean, variance);
      args.emplace(DNNL_ARG_DST, ctx_.wrap(md_, dst.data));
      ctx_.run(infer_.prim, infer_.pd.scratchpad_desc(), std::move(args));
    });
  }

  // oneDNN 2.6's backward with use_shift lists SHIFT as an input although the gradients do not
  // depend on it (the op passes zeros).
  void backward(const Tensor& src, const Tensor& diff_dst, const float* scale, const float* mean,
                const float* variance, const Tensor& diff_src, float* diff_scale, float* diff_shift) override {
    guarded(__FILE__, __LINE__, "batch norm backward", name_, [&] {
      Args args = common(src, scale, zero_shift_.data(), mean, variance);
      const memory::desc ch = f32_plain({d_.c});
      args.emplace(DNNL_ARG_DIFF_DST, ctx_.wrap(md_, diff_dst.data));
      args.emplace(DNNL_ARG_DIFF_SRC, ctx_.wrap(md_, diff_src.data));
      args.emplace(DNNL_ARG_DIFF_SCALE, ctx_.wrap(ch, diff_scale));
      args.emplace(DNNL_ARG_DIFF_SHIFT, ctx_.wrap(ch, diff_shift));
      ctx_.run(bwd_.prim, bwd_.pd.scratchpad_desc(), std::move(args));
    });
  }

 private:
  dnnl::batch_normalization_forward::primitive_desc forward_pd(bool training, bool relu) const {
    auto flags = Flags::use_scale | Flags::use_shift;
    if (!training) flags |= Flags::use_global_stats;
    if (relu) flags |= Flags::fuse_norm_relu;
    const auto prop = training ? dnnl::prop_kind::forward_training : dnnl::prop_kind::forward_inference;
    dnnl::batch_normalization_forward::desc desc(prop, md_, d_.eps, flags);
    return {desc, ctx_.attr(), ctx_.engine};
  }

  Args common(const Tensor& src, const float* scale, const float* shift, const float* mean, const float* variance) {
    const memory::desc ch = f32_plain({d_.c});
    return Args{{DNNL_ARG_SRC, ctx_.wrap(md_, src.data)},
                {DNNL_ARG_SCALE, ctx_.wrap(ch, scale)},
                {DNNL_ARG_SHIFT, ctx_.wrap(ch, shift)},
                {DNNL_ARG_MEAN, ctx_.wrap(ch, mean)},
                {DNNL_ARG_VARIANCE, ctx_.wrap(ch, variance)}};
  }

  CpuContext& ctx_;
  BnDesc d_;
  std::string name_;  // the descriptor, for error messages
  memory::desc md_;  // the data layout, (mb, c, h, w)
  Cached<dnnl::batch_normalization_forward> train_, infer_;
  Cached<dnnl::batch_normalization_backward> bwd_;
  Buffer<char> workspace_;  // fuse_norm_relu's mask
  std::vector<float> zero_shift_;
};

}  // namespace

std::unique_ptr<BatchNormOp> plan_batchnorm(CpuContext& ctx, const BnDesc& d, const TensorDesc& src,
                                            const TensorDesc& dst) {
  return guarded_plan<CpuBatchNormOp>(__FILE__, __LINE__, "planning batch norm " + d.str() + " on " + src.str(),
                                      ctx, d, src, dst);
}

}  // namespace ts::cpu
