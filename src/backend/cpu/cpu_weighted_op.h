// backend/cpu internals: what the planned oneDNN convolution (cpu_conv.cpp) and inner product
// (cpu_fc.cpp) share. A derived op chooses its three primitives (fwd_, bwd_data_, bwd_weights_)
// and calls plan_ports(); this runs them: the forward with weights and an optional fp32 bias,
// the backward-weights (weight gradients plain fp32 in the caller's layout) then, when diff_src
// has data, the backward-data, every tensor through a port (cpu_context.h) that converts between
// the caller's layout and the primitive's.
#pragma once

#include <cstdint>
#include <string>
#include <utility>

#include "backend/cpu/cpu_ops.h"

namespace ts::cpu {

// `Op` is the interface (ConvOp, FcOp); Fwd, BwdData, BwdWeights the oneDNN primitives.
template <typename Op, typename Fwd, typename BwdData, typename BwdWeights>
class WeightedOp : public Op {
 public:

  void forward(const Tensor& src, const float* wei, const float* bia, const Tensor& dst) override {
    TS_CHECK(!bias_ || bia, kind_ + " forward: " + name_ + " has a bias but bia is null");
    ++generation_;
    guarded(__FILE__, __LINE__, what_forward_.c_str(), name_, [&] {
      Args args{{DNNL_ARG_SRC, src_in_.get(ctx_, src.data, generation_)},
                {DNNL_ARG_WEIGHTS, wei_in_.get(ctx_, wei, generation_)},
                {DNNL_ARG_DST, dst_out_.target(ctx_, dst.data)}};
      if (bias_) args.emplace(DNNL_ARG_BIAS, ctx_.wrap(f32_plain({oc_}), bia));
      ctx_.run(fwd_.prim, fwd_.pd.scratchpad_desc(), std::move(args));
      dst_out_.finish(ctx_, dst.data);
    });
  }

  // Weight gradients (plain fp32) first, then diff_src; a fused ReLU's backward ran before.
  void backward(const Tensor& src, const Tensor& diff_dst, const float* wei, const Tensor& diff_src,
                float* diff_wei, float* diff_bia) override {
    TS_CHECK(!bias_ || diff_bia, kind_ + " backward: " + name_ + " has a bias but diff_bia is null");
    guarded(__FILE__, __LINE__, what_backward_weights_.c_str(), name_, [&] {
      Args args{{DNNL_ARG_SRC, src_weights_in_.get_shared(ctx_, src.data, src_in_, generation_)},
                {DNNL_ARG_DIFF_DST, diff_dst_weights_in_.get(ctx_, diff_dst.data, generation_)},
                {DNNL_ARG_DIFF_WEIGHTS, diff_wei_out_.target(ctx_, diff_wei)}};
      if (bias_) args.emplace(DNNL_ARG_DIFF_BIAS, ctx_.wrap(f32_plain({oc_}), diff_bia));
      ctx_.run(bwd_weights_.prim, bwd_weights_.pd.scratchpad_desc(), std::move(args));
      diff_wei_out_.finish(ctx_, diff_wei);
    });
    if (!diff_src) return;
    guarded(__FILE__, __LINE__, what_backward_data_.c_str(), name_, [&] {
      Args args{{DNNL_ARG_DIFF_DST, diff_dst_data_in_.get_shared(ctx_, diff_dst.data, diff_dst_weights_in_, generation_)},
                {DNNL_ARG_WEIGHTS, wei_data_in_.get_shared(ctx_, wei, wei_in_, generation_)},
                {DNNL_ARG_DIFF_SRC, diff_src_out_.target(ctx_, diff_src.data)}};
      ctx_.run(bwd_data_.prim, bwd_data_.pd.scratchpad_desc(), std::move(args));
      diff_src_out_.finish(ctx_, diff_src.data);
    });
  }

 protected:
  // `kind` ("conv", "fc") and `name` (the descriptor) name the op in messages.
  WeightedOp(CpuContext& ctx, const std::string& kind, std::string name, int64_t oc, bool bias)
      : ctx_(ctx), kind_(kind), name_(std::move(name)), what_forward_(kind + " forward"),
        what_backward_weights_(kind + " backward_weights"), what_backward_data_(kind + " backward_data"), oc_(oc),
        bias_(bias) {}

  // Once the primitives are chosen: the output's desc (the request, or the forward's choice) and
  // every port, between `src_md`, `wei_md` (the caller's plain fp32 weights and gradients) and
  // the output's md on one side and the primitives' descs on the other.
  void plan_ports(const TensorDesc& dst, const memory::desc& src_md, const memory::desc& wei_md) {
    this->dst_ = output_desc(ctx_, dst, fwd_.pd.dst_desc());
    const memory::desc dst_md = ctx_.md(this->dst_);
    src_in_.plan(ctx_, src_md, fwd_.pd.src_desc());
    wei_in_.plan(ctx_, wei_md, fwd_.pd.weights_desc(), true);
    dst_out_.plan(ctx_, fwd_.pd.dst_desc(), dst_md);
    diff_dst_data_in_.plan(ctx_, dst_md, bwd_data_.pd.diff_dst_desc());
    wei_data_in_.plan(ctx_, wei_md, bwd_data_.pd.weights_desc(), true);
    diff_src_out_.plan(ctx_, bwd_data_.pd.diff_src_desc(), src_md);
    src_weights_in_.plan(ctx_, src_md, bwd_weights_.pd.src_desc());
    diff_dst_weights_in_.plan(ctx_, dst_md, bwd_weights_.pd.diff_dst_desc());
    diff_wei_out_.plan(ctx_, bwd_weights_.pd.diff_weights_desc(), wei_md, true);
  }

  CpuContext& ctx_;
  Cached<Fwd> fwd_;
  Cached<BwdData> bwd_data_;
  Cached<BwdWeights> bwd_weights_;

 private:
  std::string kind_, name_;  // for error messages; what_*: guarded()'s, built once
  std::string what_forward_, what_backward_weights_, what_backward_data_;
  int64_t oc_;
  bool bias_;
  InPort src_in_, wei_in_, diff_dst_data_in_, wei_data_in_, src_weights_in_, diff_dst_weights_in_;
  OutPort dst_out_, diff_src_out_, diff_wei_out_;
  uint64_t generation_ = 0;  // forwards so far: tags conversions that backward may reuse
};

}  // namespace ts::cpu
