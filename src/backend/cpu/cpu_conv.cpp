// The planned oneDNN convolution (cpu_ops.h): forward, backward-data and backward-weights
// primitives chosen once with format_tag::any (oneDNN's blocked layouts), the backward ones
// hinted by the forward; ports for every tensor. Mixed precision: activations and weights in
// the compute type (bf16), weight gradients and the bias in fp32.
#include "backend/cpu/cpu_weighted_op.h"

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

class CpuConvOp final : public WeightedOp<ConvOp, dnnl::convolution_forward, dnnl::convolution_backward_data,
                                          dnnl::convolution_backward_weights> {
 public:
  CpuConvOp(CpuContext& ctx, const ConvDesc& d, const TensorDesc& src, const TensorDesc& dst)
      : WeightedOp(ctx, "conv", d.str(), d.oc, d.bias), d_(d) {
    const std::string key = ctx.prefix() + d.str();
    fwd_ = ctx.primitive<dnnl::convolution_forward>(key, [&] { return forward_pd(); });
    bwd_data_ = ctx.primitive<dnnl::convolution_backward_data>(key + "/bwd_data", [&] { return backward_data_pd(); });
    bwd_weights_ = ctx.primitive<dnnl::convolution_backward_weights>(key + "/bwd_weights",
                                                                     [&] { return backward_weights_pd(); });
    // The gradient arena is plain fp32; for grouped convolutions the 5-D goihw plain form is
    // byte for byte the caller's (oc, ic/g, kh, kw).
    plan_ports(dst, ctx.md(src), f32_plain(conv_wei_dims(d)));
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

  ConvDesc d_;
};

}  // namespace

std::unique_ptr<ConvOp> plan_conv(CpuContext& ctx, const ConvDesc& d, const TensorDesc& src, const TensorDesc& dst) {
  return guarded_plan<CpuConvOp>(__FILE__, __LINE__, "planning conv " + d.str() + " on " + src.str(), ctx, d, src, dst);
}

}  // namespace ts::cpu
