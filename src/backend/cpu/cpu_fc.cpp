// The planned oneDNN inner product (cpu_ops.h). A (mb,c,h,w) input is planned as a spatial
// inner product with (oc,c,h,w) weights, byte for byte the plain (oc, ic) arena slice, so a
// convolution's blocked output feeds it without a reorder. Outputs (logits, or the next fc's
// input) stay fp32; in bf16 mixed precision src, weights and the backward's diff_dst are bf16
// and the weight gradients fp32.
#include <cstdint>
#include <string>
#include <utility>
#include <vector>

#include "backend/cpu/cpu_weighted_op.h"

namespace ts::cpu {
namespace {

class CpuFcOp final : public WeightedOp<FcOp, dnnl::inner_product_forward, dnnl::inner_product_backward_data,
                                        dnnl::inner_product_backward_weights> {
 public:
  CpuFcOp(CpuContext& ctx, const FcDesc& d, const TensorDesc& src, const TensorDesc& dst)
      : WeightedOp(ctx, "fc", d.str(), d.oc, d.bias), d_(d) {
    // fp32 plans a (mb, c, h, w) input as it comes, with (oc, c, h, w) weights; mixed precision
    // reads it as (mb, ic) (plain, converted to the compute type anyway), where oneDNN has
    // its bf16 brgemm kernels. Weights have the input's trailing dims with oc in front.
    src_dims_ = dims_of(src.dims);
    TS_CHECK(src_dims_.size() >= 2 && src_dims_[0] == d.mb && src.numel() == d.mb * d.ic,
             "fc " + d.str() + ": input " + src.str() + " does not hold (mb, ic) values");
    if (src_dims_.size() != 4 || ctx.act_dt() != dt::f32) src_dims_ = {d.mb, d.ic};
    wei_dims_ = src_dims_;
    wei_dims_[0] = d.oc;
    const memory::desc src_md = ctx.md(src), wei_md = f32_plain(wei_dims_);
    const std::string key = ctx.prefix() + d.str() + "/" + md_key(src_md);
    fwd_ = ctx.primitive<dnnl::inner_product_forward>(key, [&] { return cheapest_forward_pd(src_md); });
    bwd_data_ = ctx.primitive<dnnl::inner_product_backward_data>(key + "/bwd_data", [&] { return backward_data_pd(); });
    bwd_weights_ = ctx.primitive<dnnl::inner_product_backward_weights>(key + "/bwd_weights",
                                                                       [&] { return backward_weights_pd(); });
    plan_ports(dst, src_md, wei_md);
  }

 private:
  dnnl::inner_product_forward::primitive_desc forward_pd(const memory::desc& src, const memory::desc& wei) const {
    const auto prop = dnnl::prop_kind::forward_training;
    const memory::desc dst = any_md({d_.mb, d_.oc}, dt::f32);
    auto desc = d_.bias ? dnnl::inner_product_forward::desc(prop, src, wei, f32_plain({d_.oc}), dst)
                        : dnnl::inner_product_forward::desc(prop, src, wei, dst);
    return {desc, ctx_.attr(), ctx_.engine};
  }

  // fp32: the forward whose layouts cost the fewest bytes of reorders per step, among the
  // weights plain (GEMM-based implementations read any transposition, so the arena's weights
  // and gradients need no reorder) or in oneDNN's choice, and the input as it comes or in
  // oneDNN's choice. Per step an input reorder costs its bytes twice (forward, and diff_src
  // back), a weights reorder three times (forward, backward-data, the gradient back); reference
  // implementations are never chosen while another exists. Mixed precision converts the fp32
  // weights every step anyway, so plain weights save nothing there and oneDNN's own choice
  // (its bf16 brgemm kernels, faster than the GEMM path) is taken.
  dnnl::inner_product_forward::primitive_desc cheapest_forward_pd(const memory::desc& given_md) const {
    const dt t = ctx_.act_dt();
    if (t != dt::f32) return forward_pd(any_md(src_dims_, t), any_md(wei_dims_, t));
    const memory::desc given = given_md.dims() == src_dims_ ? given_md : reshaped(plain_md(given_md.dims(), t), src_dims_);
    dnnl::inner_product_forward::primitive_desc best;
    size_t best_cost = SIZE_MAX;
    for (const auto& src : {given, any_md(src_dims_, t)})
      for (const auto& wei : {f32_plain(wei_dims_), any_md(wei_dims_, t)}) {
        dnnl::inner_product_forward::primitive_desc pd;
        try {
          pd = forward_pd(src, wei);
        } catch (const dnnl::error&) {
          continue;  // no implementation for this combination
        }
        const bool reference = std::string(pd.impl_info_str()).find("ref") != std::string::npos;
        size_t cost = (pd.src_desc() != given ? 2 * pd.src_desc().get_size() : 0) +
                      (pd.weights_desc() != f32_plain(wei_dims_) ? 3 * pd.weights_desc().get_size() : 0);
        if (reference) cost = SIZE_MAX - 1;
        if (cost < best_cost) best = pd, best_cost = cost;
      }
    return best;
  }

  // The backward primitives take the forward's weights layout when they can (no second copy of
  // the weights, gradients in the arena's layout when that is plain), else oneDNN's choice.
  dnnl::inner_product_backward_data::primitive_desc backward_data_pd() const {
    const dt t = ctx_.act_dt();
    for (const auto& wei : {fwd_.pd.weights_desc(), any_md(wei_dims_, t)}) {
      try {
        dnnl::inner_product_backward_data::desc desc(any_md(src_dims_, t), wei, any_md({d_.mb, d_.oc}, t));
        dnnl::inner_product_backward_data::primitive_desc pd(desc, ctx_.attr(), ctx_.engine, fwd_.pd);
        if (std::string(pd.impl_info_str()).find("ref") == std::string::npos || wei != fwd_.pd.weights_desc()) return pd;
      } catch (const dnnl::error&) {
      }
    }
    throw dnnl::error(dnnl_unimplemented, "no inner product backward-data implementation");
  }

  dnnl::inner_product_backward_weights::primitive_desc backward_weights_pd() const {
    const dt t = ctx_.act_dt();
    const memory::desc src = any_md(src_dims_, t), dst = any_md({d_.mb, d_.oc}, t);
    // fp32: plain gradients first (no reorder into the arena); mixed precision: oneDNN's choice.
    std::vector<memory::desc> candidates{f32_plain(wei_dims_), any_md(wei_dims_, dt::f32)};
    if (t != dt::f32) std::swap(candidates[0], candidates[1]);
    for (const auto& wei : candidates) {
      try {
        auto desc = d_.bias ? dnnl::inner_product_backward_weights::desc(src, wei, f32_plain({d_.oc}), dst)
                            : dnnl::inner_product_backward_weights::desc(src, wei, dst);
        dnnl::inner_product_backward_weights::primitive_desc pd(desc, ctx_.attr(), ctx_.engine, fwd_.pd);
        if (std::string(pd.impl_info_str()).find("ref") == std::string::npos || wei == candidates.back()) return pd;
      } catch (const dnnl::error&) {
      }
    }
    throw dnnl::error(dnnl_unimplemented, "no inner product backward-weights implementation");
  }

  FcDesc d_;
  memory::dims src_dims_, wei_dims_;
};

}  // namespace

std::unique_ptr<FcOp> plan_fc(CpuContext& ctx, const FcDesc& d, const TensorDesc& src, const TensorDesc& dst) {
  return guarded_plan<CpuFcOp>(__FILE__, __LINE__, "planning fc " + d.str() + " on " + src.str(), ctx, d, src, dst);
}

}  // namespace ts::cpu
