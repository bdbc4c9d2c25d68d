// The planned oneDNN concat and the dropout loop (cpu_ops.h).
// Concat lets oneDNN choose its output layout; its backward cuts diff_dst into the inputs'
// gradients with one reorder per input from a sub-memory view, which needs every channel offset
// on a block boundary of that layout: otherwise the op plans a plain output instead.
// Dropout runs on plain fp32 (its mask is in logical order), converting its input when needed.
#include "backend/cpu/cpu_ops.h"

namespace ts::cpu {
namespace {

class CpuConcatOp final : public ConcatOp {
 public:
  CpuConcatOp(CpuContext& ctx, const std::vector<TensorDesc>& srcs, const TensorDesc& dst) : ctx_(ctx) {
    for (const TensorDesc& s : srcs) src_mds_.push_back(ctx.md(s));
    try {
      plan_with(dst.is_any() ? memory::desc() : ctx.md(dst));
    } catch (const dnnl::error&) {
      if (!dst.is_any()) throw;
      const memory::dims dims = dims_of(dst.dims);
      plan_with(plain_md(dims, src_mds_[0].data_type()));
    }
    dst_ = output_desc(ctx, dst, prim_.pd.dst_desc());
  }

  void forward(const std::vector<Tensor>& srcs, const Tensor& dst) override {
    guarded(__FILE__, __LINE__, "concat forward", [&] {
      Args args{{DNNL_ARG_DST, ctx_.wrap(prim_.pd.dst_desc(), dst.data)}};
      for (size_t i = 0; i < srcs.size(); ++i) args.emplace(DNNL_ARG_MULTIPLE_SRC + int(i), ctx_.wrap(src_mds_[i], srcs[i].data));
      ctx_.run(prim_.prim, prim_.pd.scratchpad_desc(), std::move(args));
    });
  }

  void backward(const Tensor& diff_dst, const std::vector<Tensor>& diff_srcs) override {
    guarded(__FILE__, __LINE__, "concat backward", [&] {
      for (size_t i = 0; i < diff_srcs.size(); ++i) {
        if (!diff_srcs[i]) continue;
        ctx_.run_reorder(split_[i], ctx_.wrap(views_[i], diff_dst.data), ctx_.wrap(src_mds_[i], diff_srcs[i].data), false);
      }
    });
  }

 private:
  // The concat primitive for output desc `dst_md` (empty: oneDNN chooses) and the backward's
  // split reorders from sub-memory views of that output.
  void plan_with(const memory::desc& dst_md) {
    std::string key = "concat/" + md_key(dst_md);
    for (const auto& md : src_mds_) key += "/" + md_key(md);
    prim_ = ctx_.primitive<dnnl::concat>(key, [&] {
      return dst_md.is_zero() ? dnnl::concat::primitive_desc(1, src_mds_, ctx_.engine, ctx_.attr())
                              : dnnl::concat::primitive_desc(dst_md, 1, src_mds_, ctx_.engine, ctx_.attr());
    });
    const memory::desc out = prim_.pd.dst_desc();
    views_.clear();
    split_.clear();
    int64_t offset = 0;  // channel offset of input i
    for (const auto& md : src_mds_) {
      memory::dims offsets(md.dims().size(), 0);
      offsets[1] = offset;
      views_.push_back(out.submemory_desc(md.dims(), offsets));
      split_.push_back(dnnl::reorder(dnnl::reorder::primitive_desc(ctx_.engine, views_.back(), ctx_.engine, md)));
      offset += md.dims()[1];
    }
  }

  CpuContext& ctx_;
  std::vector<memory::desc> src_mds_, views_;
  std::vector<dnnl::reorder> split_;
  Cached<dnnl::concat> prim_;
};

class CpuDropoutOp final : public DropoutOp {
 public:
  CpuDropoutOp(CpuContext& ctx, const TensorDesc& src) : ctx_(ctx), n_(src.numel()) {
    const memory::desc src_md = ctx.md(src), plain = f32_plain(src_md.dims());
    dst_ = TensorDesc::plain(src.dims);
    src_in_.plan(ctx, src_md, plain);
    diff_src_out_.plan(ctx, plain, src_md);
  }

  void forward(const uint8_t* mask, float scale, const Tensor& src, const Tensor& dst) override {
    const float* in = static_cast<const float*>(src_in_.get(ctx_, src.data).get_data_handle());
    apply(mask, scale, in, dst.f32());
  }

  void backward(const uint8_t* mask, float scale, const Tensor& diff_dst, const Tensor& diff_src) override {
    float* out = static_cast<float*>(diff_src_out_.target(ctx_, diff_src.data).get_data_handle());
    apply(mask, scale, diff_dst.f32(), out);
    diff_src_out_.finish(ctx_, diff_src.data);
  }

 private:
  // dst = src * mask * scale over n values
  void apply(const uint8_t* mask, float scale, const float* src, float* dst) const {
    const int64_t n = n_;
#pragma omp parallel for
    for (int64_t i = 0; i < n; ++i) dst[i] = mask[i] ? src[i] * scale : 0.0f;
  }

  CpuContext& ctx_;
  int64_t n_;
  InPort src_in_;
  OutPort diff_src_out_;
};

}  // namespace

std::unique_ptr<ConcatOp> plan_concat(CpuContext& ctx, const std::vector<TensorDesc>& srcs, const TensorDesc& dst) {
  return guarded_plan<CpuConcatOp>(__FILE__, __LINE__, "planning concat of " + std::to_string(srcs.size()) + " inputs",
                                   ctx, srcs, dst);
}

std::unique_ptr<DropoutOp> plan_dropout(CpuContext& ctx, const TensorDesc& src) {
  return guarded_plan<CpuDropoutOp>(__FILE__, __LINE__, "planning dropout on " + src.str(), ctx, src);
}

}  // namespace ts::cpu
