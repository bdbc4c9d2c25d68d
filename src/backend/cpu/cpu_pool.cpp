// The planned oneDNN pooling (cpu_ops.h): it runs in its input's layout (and data type), its
// output takes the layout oneDNN picks for it (the same blocked layout), and max pooling keeps
// oneDNN's own argmax workspace in the caller's buffer. Average pooling excludes padding.
#include "backend/cpu/cpu_ops.h"

namespace ts::cpu {
namespace {

dnnl::algorithm pool_algorithm(const PoolDesc& d) {
  return d.kind == PoolKind::max ? dnnl::algorithm::pooling_max : dnnl::algorithm::pooling_avg_exclude_padding;
}

class CpuPoolOp final : public PoolOp {
 public:
  CpuPoolOp(CpuContext& ctx, const PoolDesc& d, const TensorDesc& src, const TensorDesc& dst) : ctx_(ctx), d_(d), name_(d.str()) {
    const memory::desc src_md = ctx.md(src);
    const memory::dims dst_dims = {d.mb, d.c, d.oh(), d.ow()};
    const std::string key = ctx.prefix() + d.str() + "/" + md_key(src_md);
    fwd_ = ctx.primitive<dnnl::pooling_forward>(key, [&] {
      dnnl::pooling_forward::desc desc(dnnl::prop_kind::forward_training, pool_algorithm(d), src_md,
                                       any_md(dst_dims, src_md.data_type()), {d.sh, d.sw}, {d.kh, d.kw},
                                       {d.ph, d.pw}, {d.ph, d.pw});
      return dnnl::pooling_forward::primitive_desc(desc, ctx.attr(), ctx.engine);
    });
    bwd_ = ctx.primitive<dnnl::pooling_backward>(key + "/bwd", [&] {
      dnnl::pooling_backward::desc desc(pool_algorithm(d), src_md, fwd_.pd.dst_desc(), {d.sh, d.sw}, {d.kh, d.kw},
                                        {d.ph, d.pw}, {d.ph, d.pw});
      return dnnl::pooling_backward::primitive_desc(desc, ctx.attr(), ctx.engine, fwd_.pd);
    });
    dst_ = output_desc(ctx, dst, fwd_.pd.dst_desc());
    const memory::desc dst_md = ctx.md(dst_);
    dst_out_.plan(ctx, fwd_.pd.dst_desc(), dst_md);
    diff_dst_in_.plan(ctx, dst_md, bwd_.pd.diff_dst_desc());
    diff_src_out_.plan(ctx, bwd_.pd.diff_src_desc(), src_md);
    src_md_ = src_md;
  }

  size_t workspace_bytes() const override {
    return d_.kind == PoolKind::max ? fwd_.pd.workspace_desc().get_size() : 0;
  }

  // src (mb,c,ih,iw) -> dst (mb,c,oh,ow)
  void forward(const Tensor& src, const Tensor& dst, void* workspace) override {
    TS_CHECK(d_.kind != PoolKind::max || workspace, "pool forward: max pooling needs a workspace: " + d_.str());
    guarded(__FILE__, __LINE__, "pool forward", name_, [&] {
      Args args{{DNNL_ARG_SRC, ctx_.wrap(src_md_, src.data)}, {DNNL_ARG_DST, dst_out_.target(ctx_, dst.data)}};
      if (d_.kind == PoolKind::max) args.emplace(DNNL_ARG_WORKSPACE, ctx_.wrap(fwd_.pd.workspace_desc(), workspace));
      ctx_.run(fwd_.prim, fwd_.pd.scratchpad_desc(), std::move(args));
      dst_out_.finish(ctx_, dst.data);
    });
  }

  // diff_dst (mb,c,oh,ow) -> diff_src (mb,c,ih,iw)
  void backward(const Tensor& diff_dst, const void* workspace, const Tensor& diff_src) override {
    TS_CHECK(d_.kind != PoolKind::max || workspace, "pool backward: max pooling needs the forward workspace: " + d_.str());
    guarded(__FILE__, __LINE__, "pool backward", name_, [&] {
      Args args{{DNNL_ARG_DIFF_DST, diff_dst_in_.get(ctx_, diff_dst.data)},
                {DNNL_ARG_DIFF_SRC, diff_src_out_.target(ctx_, diff_src.data)}};
      if (d_.kind == PoolKind::max) args.emplace(DNNL_ARG_WORKSPACE, ctx_.wrap(fwd_.pd.workspace_desc(), workspace));
      ctx_.run(bwd_.prim, bwd_.pd.scratchpad_desc(), std::move(args));
      diff_src_out_.finish(ctx_, diff_src.data);
    });
  }

 private:
  CpuContext& ctx_;
  PoolDesc d_;
  std::string name_;  // the descriptor, for error messages
  memory::desc src_md_;
  Cached<dnnl::pooling_forward> fwd_;
  Cached<dnnl::pooling_backward> bwd_;
  InPort diff_dst_in_;
  OutPort dst_out_, diff_src_out_;
};

}  // namespace

std::unique_ptr<PoolOp> plan_pool(CpuContext& ctx, const PoolDesc& d, const TensorDesc& src, const TensorDesc& dst) {
  return guarded_plan<CpuPoolOp>(__FILE__, __LINE__, "planning pool " + d.str() + " on " + src.str(), ctx, d, src, dst);
}

}  // namespace ts::cpu
