// The planned oneDNN convolution (cpu_ops.h): forward, backward-data and backward-weights
// primitives chosen once with format_tag::any (oneDNN's blocked layouts), the backward ones
// hinted by the forward; ports for every tensor. Mixed precision: activations and weights in
// the compute type (bf16), weight gradients and the bias in fp32.
#include "backend/cpu/cpu_ops.h"

namespace ts::cpu {
namespace {

memory::dims conv_src_dims(const ConvDesc& d) { return {d.mb, d.ic, d.ih, d.iw}; }
memory::dims conv_dst_dims(const ConvDesc& d) { return {d.mb, d.oc, d.oh(), d.ow()}; }
// wei (oc, ic/g, kh, kw) is byte for byte goihw (g, oc/g, ic/g, kh, kw) when grouped.
memory::dims conv_wei_dims(const ConvDesc& d) {
  if (d.groups == 1) return {d.oc, d.ic, d.kh, d.kw};
  return {d.groups, d.oc / d.groups, d.ic / d.groups, d.kh, d.kw};
}
// oneDNN checks oh == (ih + pl + pr - kh) / sh + 1 with integer division, so symmetric padding
// gives the same output size as ConvDesc::oh().
memory::dims conv_padding(const ConvDesc& d) { return {d.ph, d.pw}; }
memory::dims conv_strides(const ConvDesc& d) { return {d.sh, d.sw}; }

class CpuConvOp final : public ConvOp {
 public:
  CpuConvOp(CpuContext& ctx, const ConvDesc& d, const TensorDesc& src, const TensorDesc& dst) : ctx_(ctx), d_(d) {
    const std::string key = ctx.prefix() + d.str();
    fwd_ = ctx.primitive<dnnl::convolution_forward>(key, [&] { return forward_pd(); });
    bwd_data_ = ctx.primitive<dnnl::convolution_backward_data>(key + "/bwd_data", [&] { return backward_data_pd(); });
    bwd_weights_ = ctx.primitive<dnnl::convolution_backward_weights>(key + "/bwd_weights",
                                                                     [&] { return backward_weights_pd(); });
    dst_ = output_desc(ctx, dst, fwd_.pd.dst_desc());
    const memory::desc src_md = ctx.md(src), dst_md = ctx.md(dst_), wei_md = f32_plain(conv_wei_dims(d));
    src_in_.plan(ctx, src_md, fwd_.pd.src_desc());
    wei_in_.plan(ctx, wei_md, fwd_.pd.weights_desc(), true);
    dst_out_.plan(ctx, fwd_.pd.dst_desc(), dst_md);
    diff_dst_data_in_.plan(ctx, dst_md, bwd_data_.pd.diff_dst_desc());
    wei_data_in_.plan(ctx, wei_md, bwd_data_.pd.weights_desc(), true);
    diff_src_out_.plan(ctx, bwd_data_.pd.diff_src_desc(), src_md);
    src_weights_in_.plan(ctx, src_md, bwd_weights_.pd.src_desc());
    diff_dst_weights_in_.plan(ctx, dst_md, bwd_weights_.pd.diff_dst_desc());
    // The gradient arena is plain fp32; for grouped convolutions the 5-D goihw plain form is
    // byte for byte the caller's (oc, ic/g, kh, kw).
    diff_wei_out_.plan(ctx, bwd_weights_.pd.diff_weights_desc(), wei_md, true);
  }

  const TensorDesc& dst_desc() const override { return dst_; }

  // src (mb,ic,ih,iw), wei (oc,ic/g,kh,kw), bia (oc) -> dst (mb,oc,oh,ow) [relu'd when d.relu]
  void forward(const Tensor& src, const float* wei, const float* bia, const Tensor& dst) override {
    TS_CHECK(!d_.bias || bia, "conv forward: " + d_.str() + " has a bias but bia is null");
    ++generation_;
    guarded(__FILE__, __LINE__, "conv forward " + d_.str(), [&] {
      Args args{{DNNL_ARG_SRC, src_in_.get(ctx_, src.data, generation_)},
                {DNNL_ARG_WEIGHTS, wei_in_.get(ctx_, wei, generation_)},
                {DNNL_ARG_DST, dst_out_.target(ctx_, dst.data)}};
      if (d_.bias) args.emplace(DNNL_ARG_BIAS, ctx_.wrap(f32_plain({d_.oc}), bia));
      ctx_.run(fwd_.prim, fwd_.pd.scratchpad_desc(), std::move(args));
      dst_out_.finish(ctx_, dst.data);
    });
  }

  // Weight gradients (plain fp32) first, then diff_src; the fused ReLU's backward ran before.
  void backward(const Tensor& src, const Tensor& diff_dst, const float* wei, const Tensor& diff_src,
                float* diff_wei, float* diff_bia) override {
    TS_CHECK(!d_.bias || diff_bia, "conv backward: " + d_.str() + " has a bias but diff_bia is null");
    guarded(__FILE__, __LINE__, "conv backward_weights " + d_.str(), [&] {
      Args args{{DNNL_ARG_SRC, src_weights_in_.get_shared(ctx_, src.data, src_in_, generation_)},
                {DNNL_ARG_DIFF_DST, diff_dst_weights_in_.get(ctx_, diff_dst.data, generation_)},
                {DNNL_ARG_DIFF_WEIGHTS, diff_wei_out_.target(ctx_, diff_wei)}};
      if (d_.bias) args.emplace(DNNL_ARG_DIFF_BIAS, ctx_.wrap(f32_plain({d_.oc}), diff_bia));
      ctx_.run(bwd_weights_.prim, bwd_weights_.pd.scratchpad_desc(), std::move(args));
      diff_wei_out_.finish(ctx_, diff_wei);
    });
    if (!diff_src) return;
    guarded(__FILE__, __LINE__, "conv backward_data " + d_.str(), [&] {
      Args args{{DNNL_ARG_DIFF_DST, diff_dst_data_in_.get_shared(ctx_, diff_dst.data, diff_dst_weights_in_, generation_)},
                {DNNL_ARG_WEIGHTS, wei_data_in_.get_shared(ctx_, wei, wei_in_, generation_)},
                {DNNL_ARG_DIFF_SRC, diff_src_out_.target(ctx_, diff_src.data)}};
      ctx_.run(bwd_data_.prim, bwd_data_.pd.scratchpad_desc(), std::move(args));
      diff_src_out_.finish(ctx_, diff_src.data);
    });
  }

 private:
  dnnl::convolution_forward::primitive_desc forward_pd() const {
    const dt t = ctx_.act_dt();
    const memory::desc src = any_md(conv_src_dims(d_), t), wei = any_md(conv_wei_dims(d_), t),
                       dst = any_md(conv_dst_dims(d_), t);
    const auto prop = dnnl::prop_kind::forward_training;
    const auto algo = dnnl::algorithm::convolution_direct;
    auto desc = d_.bias ? dnnl::convolution_forward::desc(prop, algo, src, wei, f32_plain({d_.oc}), dst,
                                                          conv_strides(d_), conv_padding(d_), conv_padding(d_))
                        : dnnl::convolution_forward::desc(prop, algo, src, wei, dst, conv_strides(d_),
                                                          conv_padding(d_), conv_padding(d_));
    return {desc, ctx_.attr(d_.relu), ctx_.engine};
  }

  dnnl::convolution_backward_data::primitive_desc backward_data_pd() const {
    const dt t = ctx_.act_dt();
    dnnl::convolution_backward_data::desc desc(dnnl::algorithm::convolution_direct, any_md(conv_src_dims(d_), t),
                                               any_md(conv_wei_dims(d_), t), any_md(conv_dst_dims(d_), t),
                                               conv_strides(d_), conv_padding(d_), conv_padding(d_));
    return {desc, ctx_.attr(), ctx_.engine, fwd_.pd};
  }

  dnnl::convolution_backward_weights::primitive_desc backward_weights_pd() const {
    const dt t = ctx_.act_dt();
    const memory::desc src = any_md(conv_src_dims(d_), t), wei = any_md(conv_wei_dims(d_), dt::f32),
                       dst = any_md(conv_dst_dims(d_), t);
    const auto algo = dnnl::algorithm::convolution_direct;
    auto desc = d_.bias ? dnnl::convolution_backward_weights::desc(algo, src, wei, f32_plain({d_.oc}), dst,
                                                                   conv_strides(d_), conv_padding(d_), conv_padding(d_))
                        : dnnl::convolution_backward_weights::desc(algo, src, wei, dst, conv_strides(d_),
                                                                   conv_padding(d_), conv_padding(d_));
    return {desc, ctx_.attr(), ctx_.engine, fwd_.pd};
  }

  CpuContext& ctx_;
  ConvDesc d_;
  TensorDesc dst_;
  Cached<dnnl::convolution_forward> fwd_;
  Cached<dnnl::convolution_backward_data> bwd_data_;
  Cached<dnnl::convolution_backward_weights> bwd_weights_;
  InPort src_in_, wei_in_, diff_dst_data_in_, wei_data_in_, src_weights_in_, diff_dst_weights_in_;
  uint64_t generation_ = 0;  // forwards so far: tags conversions that backward may reuse
  OutPort dst_out_, diff_src_out_, diff_wei_out_;
};

}  // namespace

std::unique_ptr<ConvOp> plan_conv(CpuContext& ctx, const ConvDesc& d, const TensorDesc& src, const TensorDesc& dst) {
  std::unique_ptr<ConvOp> op;
  guarded(__FILE__, __LINE__, "planning conv " + d.str() + " on " + src.str(),
          [&] { op = std::make_unique<CpuConvOp>(ctx, d, src, dst); });
  return op;
}

}  // namespace ts::cpu
