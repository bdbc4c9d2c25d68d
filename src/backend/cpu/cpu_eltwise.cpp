// The planned oneDNN element-wise ops (cpu_ops.h): activations and the residual add, in their
// input's layout and data type. relu6 is clip_v2 over [0, 6], whose backward passes gradient
// strictly inside (0, 6) as ref does; sigmoid's backward reads the forward output.
#include "backend/cpu/cpu_ops.h"

namespace ts::cpu {
namespace {

dnnl::algorithm eltwise_algorithm(const EltwiseDesc& d) {
  switch (d.kind) {
    case EltwiseKind::relu: return dnnl::algorithm::eltwise_relu;
    case EltwiseKind::relu6: return dnnl::algorithm::eltwise_clip_v2;
    case EltwiseKind::sigmoid: break;
  }
  return dnnl::algorithm::eltwise_logistic_use_dst_for_bwd;
}
float eltwise_beta(const EltwiseDesc& d) { return d.kind == EltwiseKind::relu6 ? 6.0f : 0.0f; }

// Element-wise ops write in their input's desc; a request for another is a planning error.
TensorDesc same_as_input(const TensorDesc& src, const TensorDesc& dst, const std::string& what) {
  TS_CHECK(dst.is_any() || dst == src, what + " writes in its input's desc " + src.str() + ", not " + dst.str());
  return src;
}

class CpuEltwiseOp final : public EltwiseOp {
 public:
  CpuEltwiseOp(CpuContext& ctx, const EltwiseDesc& d, const TensorDesc& src, const TensorDesc& dst)
      : ctx_(ctx), d_(d), name_(d.str()) {
    dst_ = same_as_input(src, dst, "eltwise " + d.str());
    md_ = ctx.md(src);
    const std::string key = ctx.prefix() + d.str() + "/" + md_key(md_);
    fwd_ = ctx.primitive<dnnl::eltwise_forward>(key, [&] {
      dnnl::eltwise_forward::desc desc(dnnl::prop_kind::forward_training, eltwise_algorithm(d), md_, 0.0f,
                                       eltwise_beta(d));
      return dnnl::eltwise_forward::primitive_desc(desc, ctx.attr(), ctx.engine);
    });
    bwd_ = ctx.primitive<dnnl::eltwise_backward>(key + "/bwd", [&] {
      dnnl::eltwise_backward::desc desc(eltwise_algorithm(d), md_, md_, 0.0f, eltwise_beta(d));
      return dnnl::eltwise_backward::primitive_desc(desc, ctx.attr(), ctx.engine, fwd_.pd);
    });
  }

  void forward(const Tensor& src, const Tensor& dst) override {
    guarded(__FILE__, __LINE__, "eltwise forward", name_, [&] {
      ctx_.run(fwd_.prim, fwd_.pd.scratchpad_desc(),
               {{DNNL_ARG_SRC, ctx_.wrap(md_, src.data)}, {DNNL_ARG_DST, ctx_.wrap(md_, dst.data)}});
    });
  }

  void backward(const Tensor& src, const Tensor& dst, const Tensor& diff_dst, const Tensor& diff_src) override {
    guarded(__FILE__, __LINE__, "eltwise backward", name_, [&] {
      const bool use_dst = d_.kind == EltwiseKind::sigmoid;
      ctx_.run(bwd_.prim, bwd_.pd.scratchpad_desc(),
               {{use_dst ? DNNL_ARG_DST : DNNL_ARG_SRC, ctx_.wrap(md_, use_dst ? dst.data : src.data)},
                {DNNL_ARG_DIFF_DST, ctx_.wrap(md_, diff_dst.data)},
                {DNNL_ARG_DIFF_SRC, ctx_.wrap(md_, diff_src.data)}});
    });
  }

 private:
  CpuContext& ctx_;
  EltwiseDesc d_;
  std::string name_;  // the descriptor, for error messages
  memory::desc md_;
  Cached<dnnl::eltwise_forward> fwd_;
  Cached<dnnl::eltwise_backward> bwd_;
};

// dst = a + b [relu] in a's layout; b is reordered into it when its layout differs.
class CpuAddOp final : public AddOp {
 public:
  CpuAddOp(CpuContext& ctx, const TensorDesc& a, const TensorDesc& b, bool relu)
      : ctx_(ctx), md_(ctx.md(a)), relu_(relu) {
    dst_ = a;
    TS_CHECK(a.dims == b.dims, "add: inputs " + a.str() + " and " + b.str() + " differ in shape");
    const std::string key = ctx.prefix() + (relu ? "add_relu/" : "add/") + md_key(md_);
    prim_ = ctx.primitive<dnnl::binary>(key, [&] {
      dnnl::binary::desc desc(dnnl::algorithm::binary_add, md_, md_, md_);
      return dnnl::binary::primitive_desc(desc, ctx.attr(relu), ctx.engine);
    });
    b_in_.plan(ctx, ctx.md(b), md_);
  }

  void forward(const Tensor& a, const Tensor& b, const Tensor& dst) override {
    guarded(__FILE__, __LINE__, relu_ ? "add_relu" : "add", [&] {
      ctx_.run(prim_.prim, prim_.pd.scratchpad_desc(),
               {{DNNL_ARG_SRC_0, ctx_.wrap(md_, a.data)}, {DNNL_ARG_SRC_1, b_in_.get(ctx_, b.data)},
                {DNNL_ARG_DST, ctx_.wrap(md_, dst.data)}});
    });
  }

 private:
  CpuContext& ctx_;
  memory::desc md_;
  bool relu_;
  Cached<dnnl::binary> prim_;
  InPort b_in_;
};

}  // namespace

std::unique_ptr<EltwiseOp> plan_eltwise(CpuContext& ctx, const EltwiseDesc& d, const TensorDesc& src,
                                        const TensorDesc& dst) {
  return guarded_plan<CpuEltwiseOp>(__FILE__, __LINE__, "planning eltwise " + d.str() + " on " + src.str(),
                                    ctx, d, src, dst);
}

std::unique_ptr<AddOp> plan_add(CpuContext& ctx, const TensorDesc& a, const TensorDesc& b, bool relu) {
  return guarded_plan<CpuAddOp>(__FILE__, __LINE__, "planning add on " + a.str() + " and " + b.str(), ctx, a, b, relu);
}

}  // namespace ts::cpu
