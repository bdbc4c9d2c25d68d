// The planned oneDNN inner product (cpu_ops.h). A (mb,c,h,w) input is planned as a spatial
// inner product with (oc,c,h,w) weights, byte for byte the plain (oc, ic) arena slice, so a
// convolution's blocked output feeds it without a reorder. Outputs (logits, or the next fc's
// input) stay fp32; in bf16 mixed precision src, weights and the backward's diff_dst are bf16
// and the weight gradients fp32.
#include <cstdint>
#include <string>
#include <utility>
#include <vector>

#include "backend/cpu/cpu_ops.h"

namespace ts::cpu {
namespace {

class CpuFcOp final : public FcOp {
 public:
  CpuFcOp(CpuContext& ctx, const FcDesc& d, const TensorDesc& src, const TensorDesc& dst) : ctx_(ctx), d_(d), name_(d.str()) {
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
    dst_ = output_desc(ctx, dst, fwd_.pd.dst_desc());
    const memory::desc dst_md = ctx.md(dst_);
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
    guarded(__FILE__, __LINE__, "fc forward", name_, [&] {
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
    guarded(__FILE__, __LINE__, "fc backward_weights", name_, [&] {
      Args args{{DNNL_ARG_SRC, src_weights_in_.get_shared(ctx_, src.data, src_in_, generation_)},
                {DNNL_ARG_DIFF_DST, diff_dst_weights_in_.get(ctx_, diff_dst.data, generation_)},
                {DNNL_ARG_DIFF_WEIGHTS, diff_wei_out_.target(ctx_, diff_wei)}};
      if (d_.bias) args.emplace(DNNL_ARG_DIFF_BIAS, ctx_.wrap(f32_plain({d_.oc}), diff_bia));
      ctx_.run(bwd_weights_.prim, bwd_weights_.pd.scratchpad_desc(), std::move(args));
      diff_wei_out_.finish(ctx_, diff_wei);
    });
    if (!diff_src) return;
    guarded(__FILE__, __LINE__, "fc backward_data", name_, [&] {
      Args args{{DNNL_ARG_DIFF_DST, diff_dst_data_in_.get_shared(ctx_, diff_dst.data, diff_dst_weights_in_, generation_)},
                {DNNL_ARG_WEIGHTS, wei_data_in_.get_shared(ctx_, wei, wei_in_, generation_)},
                {DNNL_ARG_DIFF_SRC, diff_src_out_.target(ctx_, diff_src.data)}};
      ctx_.run(bwd_data_.prim, bwd_data_.pd.scratchpad_desc(), std::move(args));
      diff_src_out_.finish(ctx_, diff_src.data);
    });
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

  CpuContext& ctx_;
  FcDesc d_;
  std::string name_;  // the descriptor, for error messages
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
