// The planned oneDNN inner product (cpu_ops.h). A (mb,c,h,w) input is planned as a spatial
// inner product with (oc,c,h,w) weights, byte for byte the plain (oc, ic) arena slice, so a
// convolution's blocked output feeds it without a reorder. Outputs (logits, or the next fc's
// input) stay fp32; in bf16 mixed precision src, weights and the backward's diff_dst are bf16
// and the weight gradients fp32.
#include "backend/cpu/cpu_ops.h"

namespace ts::cpu {
namespace {

class CpuFcOp final : public FcOp {
 public:
  CpuFcOp(CpuContext& ctx, const FcDesc& d, const TensorDesc& src, const TensorDesc& dst) : ctx_(ctx), d_(d) {
    // src (mb, ic) or (mb, c, h, w); weights have the same trailing dims with oc in front.
    src_dims_ = dims_of(src.dims);
    TS_CHECK(src_dims_.size() >= 2 && src_dims_[0] == d.mb && src.numel() == d.mb * d.ic,
             "fc " + d.str() + ": input " + src.str() + " does not hold (mb, ic) values");
    if (src_dims_.size() == 3 || src_dims_.size() > 4) src_dims_ = {d.mb, d.ic};
    wei_dims_ = src_dims_;
    wei_dims_[0] = d.oc;
    const std::string key = ctx.prefix() + d.str() + "/" + std::to_string(src_dims_.size()) + "d";
    fwd_ = ctx.primitive<dnnl::inner_product_forward>(key, [&] { return forward_pd(); });
    bwd_data_ = ctx.primitive<dnnl::inner_product_backward_data>(key + "/bwd_data", [&] { return backward_data_pd(); });
    bwd_weights_ = ctx.primitive<dnnl::inner_product_backward_weights>(key + "/bwd_weights",
                                                                       [&] { return backward_weights_pd(); });
    dst_ = output_desc(ctx, dst, fwd_.pd.dst_desc());
    const memory::desc src_md = reshaped_input(ctx.md(src)), dst_md = ctx.md(dst_), wei_md = f32_plain(wei_dims_);
    src_in_.plan(ctx, src_md, fwd_.pd.src_desc());
    wei_in_.plan(ctx, wei_md, fwd_.pd.weights_desc(), true);
    dst_out_.plan(ctx, fwd_.pd.dst_desc(), dst_md);
    diff_dst_data_in_.plan(ctx, dst_md, bwd_data_.pd.diff_dst_desc());
    wei_data_in_.plan(ctx, wei_md, bwd_data_.pd.weights_desc(), true);
    diff_src_out_.plan(ctx, bwd_data_.pd.diff_src_desc(), src_md);
    src_weights_in_.plan(ctx, src_md, bwd_weights_.pd.src_desc());
    diff_dst_weights_in_.plan(ctx, dst_md, bwd_weights_.pd.diff_dst_desc());
    diff_wei_out_.plan(ctx, bwd_weights_.pd.diff_weights_desc(), wei_md, true);
  }

  const TensorDesc& dst_desc() const override { return dst_; }

  // src (mb, ic), wei (oc, ic), bia (oc) -> dst (mb, oc)
  void forward(const Tensor& src, const float* wei, const float* bia, const Tensor& dst) override {
    TS_CHECK(!d_.bias || bia, "fc forward: " + d_.str() + " has a bias but bia is null");
    ++generation_;
    guarded(__FILE__, __LINE__, "fc forward " + d_.str(), [&] {
      Args args{{DNNL_ARG_SRC, src_in_.get(ctx_, src.data, generation_)},
                {DNNL_ARG_WEIGHTS, wei_in_.get(ctx_, wei, generation_)},
                {DNNL_ARG_DST, dst_out_.target(ctx_, dst.data)}};
      if (d_.bias) args.emplace(DNNL_ARG_BIAS, ctx_.wrap(f32_plain({d_.oc}), bia));
      ctx_.run(fwd_.prim, fwd_.pd.scratchpad_desc(), std::move(args));
      dst_out_.finish(ctx_, dst.data);
    });
  }

  void backward(const Tensor& src, const Tensor& diff_dst, const float* wei, const Tensor& diff_src,
                float* diff_wei, float* diff_bia) override {
    TS_CHECK(!d_.bias || diff_bia, "fc backward: " + d_.str() + " has a bias but diff_bia is null");
    guarded(__FILE__, __LINE__, "fc backward_weights " + d_.str(), [&] {
      Args args{{DNNL_ARG_SRC, src_weights_in_.get_shared(ctx_, src.data, src_in_, generation_)},
                {DNNL_ARG_DIFF_DST, diff_dst_weights_in_.get(ctx_, diff_dst.data, generation_)},
                {DNNL_ARG_DIFF_WEIGHTS, diff_wei_out_.target(ctx_, diff_wei)}};
      if (d_.bias) args.emplace(DNNL_ARG_DIFF_BIAS, ctx_.wrap(f32_plain({d_.oc}), diff_bia));
      ctx_.run(bwd_weights_.prim, bwd_weights_.pd.scratchpad_desc(), std::move(args));
      diff_wei_out_.finish(ctx_, diff_wei);
    });
    if (!diff_src) return;
    guarded(__FILE__, __LINE__, "fc backward_data " + d_.str(), [&] {
      Args args{{DNNL_ARG_DIFF_DST, diff_dst_data_in_.get_shared(ctx_, diff_dst.data, diff_dst_weights_in_, generation_)},
                {DNNL_ARG_WEIGHTS, wei_data_in_.get_shared(ctx_, wei, wei_in_, generation_)},
                {DNNL_ARG_DIFF_SRC, diff_src_out_.target(ctx_, diff_src.data)}};
      ctx_.run(bwd_data_.prim, bwd_data_.pd.scratchpad_desc(), std::move(args));
      diff_src_out_.finish(ctx_, diff_src.data);
    });
  }

 private:
  // The input seen with the dims the primitive was planned for (a 3-D or 5-D tensor as 2-D).
  memory::desc reshaped_input(const memory::desc& md) const { return reshaped(md, src_dims_); }

  dnnl::inner_product_forward::primitive_desc forward_pd() const {
    const dt t = ctx_.act_dt();
    const memory::desc src = any_md(src_dims_, t), wei = any_md(wei_dims_, t), dst = any_md({d_.mb, d_.oc}, dt::f32);
    const auto prop = dnnl::prop_kind::forward_training;
    auto desc = d_.bias ? dnnl::inner_product_forward::desc(prop, src, wei, f32_plain({d_.oc}), dst)
                        : dnnl::inner_product_forward::desc(prop, src, wei, dst);
    return {desc, ctx_.attr(), ctx_.engine};
  }

  dnnl::inner_product_backward_data::primitive_desc backward_data_pd() const {
    const dt t = ctx_.act_dt();
    dnnl::inner_product_backward_data::desc desc(any_md(src_dims_, t), any_md(wei_dims_, t), any_md({d_.mb, d_.oc}, t));
    return {desc, ctx_.attr(), ctx_.engine, fwd_.pd};
  }

  dnnl::inner_product_backward_weights::primitive_desc backward_weights_pd() const {
    const dt t = ctx_.act_dt();
    const memory::desc src = any_md(src_dims_, t), wei = any_md(wei_dims_, dt::f32), dst = any_md({d_.mb, d_.oc}, t);
    auto desc = d_.bias ? dnnl::inner_product_backward_weights::desc(src, wei, f32_plain({d_.oc}), dst)
                        : dnnl::inner_product_backward_weights::desc(src, wei, dst);
    return {desc, ctx_.attr(), ctx_.engine, fwd_.pd};
  }

  CpuContext& ctx_;
  FcDesc d_;
  memory::dims src_dims_, wei_dims_;
  TensorDesc dst_;
  Cached<dnnl::inner_product_forward> fwd_;
  Cached<dnnl::inner_product_backward_data> bwd_data_;
  Cached<dnnl::inner_product_backward_weights> bwd_weights_;
  InPort src_in_, wei_in_, diff_dst_data_in_, wei_data_in_, src_weights_in_, diff_dst_weights_in_;
  OutPort dst_out_, diff_src_out_, diff_wei_out_;
  uint64_t generation_ = 0;  // forwards so far: tags conversions that backward may reuse
};

}  // namespace

std::unique_ptr<FcOp> plan_fc(CpuContext& ctx, const FcDesc& d, const TensorDesc& src, const TensorDesc& dst) {
  std::unique_ptr<FcOp> op;
  guarded(__FILE__, __LINE__, "planning fc " + d.str() + " on " + src.str(),
          [&] { op = std::make_unique<CpuFcOp>(ctx, d, src, dst); });
  return op;
}

}  // namespace ts::cpu
