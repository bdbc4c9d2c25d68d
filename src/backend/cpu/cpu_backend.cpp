// The oneDNN CPU backend (see cpu_backend.h). Each op looks up (or, the first time, builds) a
// plan: the primitive descriptor and primitive for its descriptor string, then binds the
// caller's pointers as dnnl::memory objects and executes on the backend's stream.
//
// Layouts: every tensor the caller passes is plain (nchw / oihw / goihw / nc / oi / x). For now
// the primitives are created on those same plain memory descs, so no reorders are needed. To
// move to blocked layouts later, create the primitive descriptors with format_tag::any and put
// a reorder between the user md (the *_md() helpers below) and pd.*_desc() in the execute
// functions; the plans are the place to keep the blocked buffers.
#include "backend/cpu/cpu_backend.h"

#include <omp.h>

#include <algorithm>
#include <cmath>
#include <cstring>
#include <unordered_map>
#include <vector>
#include <oneapi/dnnl/dnnl.hpp>

#include "core/error.h"

namespace ts {
namespace {

using dnnl::memory;
using tag = dnnl::memory::format_tag;
using dt = dnnl::memory::data_type;

// Runs f and turns a dnnl::error into a RuntimeError naming the op, its descriptor and where.
template <typename F>
void guarded(const char* file, int line, const std::string& what, F&& f) {
  try {
    f();
  } catch (const dnnl::error& e) {
    throw RuntimeError(source_location_string(file, line) + ": oneDNN call failed in " + what +
                       ": " + e.what() + " (dnnl_status_t " + std::to_string(int(e.status)) + ")");
  }
}

// ---- plain (user) memory descs ----
memory::desc f32_md(const memory::dims& dims, tag t) { return memory::desc(dims, dt::f32, t); }

memory::desc conv_src_md(const ConvDesc& d) { return f32_md({d.mb, d.ic, d.ih, d.iw}, tag::nchw); }
memory::desc conv_dst_md(const ConvDesc& d) { return f32_md({d.mb, d.oc, d.oh(), d.ow()}, tag::nchw); }
memory::desc conv_bia_md(const ConvDesc& d) { return f32_md({d.oc}, tag::x); }
// wei (oc, ic/g, kh, kw) is byte-for-byte goihw (g, oc/g, ic/g, kh, kw) when grouped.
memory::desc conv_wei_md(const ConvDesc& d) {
  if (d.groups == 1) return f32_md({d.oc, d.ic, d.kh, d.kw}, tag::oihw);
  return f32_md({d.groups, d.oc / d.groups, d.ic / d.groups, d.kh, d.kw}, tag::goihw);
}
memory::dims conv_strides(const ConvDesc& d) { return {d.sh, d.sw}; }
// oneDNN checks oh == (ih + pl + pr - kh) / sh + 1 with integer division, so symmetric padding
// gives the same output size as ConvDesc::oh().
memory::dims conv_padding(const ConvDesc& d) { return {d.ph, d.pw}; }

memory::desc pool_src_md(const PoolDesc& d) { return f32_md({d.mb, d.c, d.ih, d.iw}, tag::nchw); }
memory::desc pool_dst_md(const PoolDesc& d) { return f32_md({d.mb, d.c, d.oh(), d.ow()}, tag::nchw); }
dnnl::algorithm pool_algorithm(const PoolDesc& d) {
  return d.kind == PoolKind::max ? dnnl::algorithm::pooling_max
                                 : dnnl::algorithm::pooling_avg_exclude_padding;
}

memory::desc fc_src_md(const FcDesc& d) { return f32_md({d.mb, d.ic}, tag::nc); }
memory::desc fc_wei_md(const FcDesc& d) { return f32_md({d.oc, d.ic}, tag::oi); }
memory::desc fc_bia_md(const FcDesc& d) { return f32_md({d.oc}, tag::x); }
memory::desc fc_dst_md(const FcDesc& d) { return f32_md({d.mb, d.oc}, tag::nc); }

memory::desc bn_data_md(const BnDesc& d) { return f32_md({d.mb, d.c, d.h, d.w}, tag::nchw); }
memory::desc bn_channel_md(const BnDesc& d) { return f32_md({d.c}, tag::x); }

memory::desc vector_md(int64_t n) { return f32_md({n}, tag::a); }

dnnl::algorithm eltwise_algorithm(const EltwiseDesc& d) {
  // Sigmoid's backward reads the forward output (what the caller keeps anyway).
  // relu6 is clip_v2 over [0, 6], whose backward passes gradient strictly inside (0, 6) as ref does.
  switch (d.kind) {
    case EltwiseKind::relu: return dnnl::algorithm::eltwise_relu;
    case EltwiseKind::relu6: return dnnl::algorithm::eltwise_clip_v2;
    case EltwiseKind::sigmoid: break;
  }
  return dnnl::algorithm::eltwise_logistic_use_dst_for_bwd;
}

// alpha/beta of the eltwise algorithm: the clip bounds for relu6, unused (0) otherwise.
float eltwise_alpha(const EltwiseDesc&) { return 0.0f; }
float eltwise_beta(const EltwiseDesc& d) { return d.kind == EltwiseKind::relu6 ? 6.0f : 0.0f; }

// A planned primitive: its descriptor (for workspace and memory descs) and the primitive.
template <typename Prim>
struct Plan {
  typename Prim::primitive_desc pd;
  Prim prim;
};

template <typename Prim>
using PlanCache = std::unordered_map<std::string, Plan<Prim>>;

// Finds the plan for key, or builds it from make_pd() the first time.
template <typename Prim, typename MakePd>
Plan<Prim>& find_or_plan(PlanCache<Prim>& cache, const std::string& key, MakePd&& make_pd) {
  auto it = cache.find(key);
  if (it == cache.end()) {
    typename Prim::primitive_desc pd = make_pd();
    it = cache.emplace(key, Plan<Prim>{pd, Prim(pd)}).first;
  }
  return it->second;
}

}  // namespace

struct CpuBackend::Impl {
  dnnl::engine engine{dnnl::engine::kind::cpu, 0};
  dnnl::stream stream{engine};

  PlanCache<dnnl::convolution_forward> conv_fwd;
  PlanCache<dnnl::convolution_backward_data> conv_bwd_data;
  PlanCache<dnnl::convolution_backward_weights> conv_bwd_weights;
  PlanCache<dnnl::pooling_forward> pool_fwd;
  PlanCache<dnnl::pooling_backward> pool_bwd;
  PlanCache<dnnl::inner_product_forward> fc_fwd;
  PlanCache<dnnl::inner_product_backward_data> fc_bwd_data;
  PlanCache<dnnl::inner_product_backward_weights> fc_bwd_weights;
  PlanCache<dnnl::batch_normalization_forward> bn_fwd_training;
  PlanCache<dnnl::batch_normalization_forward> bn_fwd_inference;
  PlanCache<dnnl::batch_normalization_backward> bn_bwd;
  PlanCache<dnnl::eltwise_forward> eltwise_fwd;
  PlanCache<dnnl::eltwise_backward> eltwise_bwd;
  PlanCache<dnnl::softmax_forward> softmax_fwd;
  PlanCache<dnnl::binary> add;
  PlanCache<dnnl::concat> concat;
  // oneDNN 2.6 batch-norm backward with use_shift lists SHIFT as an input although the
  // gradients do not depend on it; the table does not pass shift to backward, so bind zeros.
  std::vector<float> zero_shift;

  // Wraps a caller's pointer (never copied; oneDNN does not take ownership).
  memory bind(const memory::desc& md, const void* ptr) {
    return memory(md, engine, const_cast<void*>(ptr));
  }

  void execute(const dnnl::primitive& prim, const std::unordered_map<int, memory>& args) {
    prim.execute(stream, args);
    stream.wait();
  }

  // ---- plans ----
  Plan<dnnl::convolution_forward>& conv_forward_plan(const ConvDesc& d) {
    return find_or_plan(conv_fwd, d.str(), [&] {
      auto desc = d.bias ? dnnl::convolution_forward::desc(
                               dnnl::prop_kind::forward_training, dnnl::algorithm::convolution_direct,
                               conv_src_md(d), conv_wei_md(d), conv_bia_md(d), conv_dst_md(d),
                               conv_strides(d), conv_padding(d), conv_padding(d))
                         : dnnl::convolution_forward::desc(
                               dnnl::prop_kind::forward_training, dnnl::algorithm::convolution_direct,
                               conv_src_md(d), conv_wei_md(d), conv_dst_md(d), conv_strides(d),
                               conv_padding(d), conv_padding(d));
      return dnnl::convolution_forward::primitive_desc(desc, engine);
    });
  }

  Plan<dnnl::pooling_forward>& pool_forward_plan(const PoolDesc& d) {
    return find_or_plan(pool_fwd, d.str(), [&] {
      dnnl::pooling_forward::desc desc(dnnl::prop_kind::forward_training, pool_algorithm(d),
                                       pool_src_md(d), pool_dst_md(d), {d.sh, d.sw}, {d.kh, d.kw},
                                       {d.ph, d.pw}, {d.ph, d.pw});
      return dnnl::pooling_forward::primitive_desc(desc, engine);
    });
  }

  Plan<dnnl::inner_product_forward>& fc_forward_plan(const FcDesc& d) {
    return find_or_plan(fc_fwd, d.str(), [&] {
      auto desc = d.bias ? dnnl::inner_product_forward::desc(dnnl::prop_kind::forward_training,
                                                             fc_src_md(d), fc_wei_md(d),
                                                             fc_bia_md(d), fc_dst_md(d))
                         : dnnl::inner_product_forward::desc(dnnl::prop_kind::forward_training,
                                                             fc_src_md(d), fc_wei_md(d),
                                                             fc_dst_md(d));
      return dnnl::inner_product_forward::primitive_desc(desc, engine);
    });
  }

  Plan<dnnl::batch_normalization_forward>& bn_forward_training_plan(const BnDesc& d) {
    return find_or_plan(bn_fwd_training, d.str(), [&] {
      dnnl::batch_normalization_forward::desc desc(
          dnnl::prop_kind::forward_training, bn_data_md(d), d.eps,
          dnnl::normalization_flags::use_scale | dnnl::normalization_flags::use_shift);
      return dnnl::batch_normalization_forward::primitive_desc(desc, engine);
    });
  }

  Plan<dnnl::eltwise_forward>& eltwise_forward_plan(const EltwiseDesc& d) {
    return find_or_plan(eltwise_fwd, d.str(), [&] {
      dnnl::eltwise_forward::desc desc(dnnl::prop_kind::forward_training, eltwise_algorithm(d),
                                       vector_md(d.n), eltwise_alpha(d), eltwise_beta(d));
      return dnnl::eltwise_forward::primitive_desc(desc, engine);
    });
  }
};

CpuBackend::CpuBackend() {
  guarded(__FILE__, __LINE__, "creating the cpu engine and stream",
          [&] { impl_ = std::make_unique<Impl>(); });
}

CpuBackend::~CpuBackend() = default;

bool CpuBackend::supports(Op op, Precision precision) const {
  // fp32 everywhere for now; bf16 comes with the blocked-layout work.
  return precision == Precision::fp32;
}

void CpuBackend::set_precision(Precision precision) {
  if (!supports(Op::conv, precision))
    throw ConfigError(std::string("backend cpu does not compute in '") + precision_name(precision) +
                      "' in this build; accepted: fp32" + (precision == Precision::fp16 || precision == Precision::tf32
                                                               ? " (fp16 and tf32 need backend cuda)"
                                                               : ""));
  precision_ = precision;
}

void CpuBackend::set_threads(int threads) {
  TS_CHECK(threads >= 1, "cpu backend: threads must be >= 1, got " + std::to_string(threads));
  omp_set_num_threads(threads);
}

// ---- convolution ----------------------------------------------------------------------------
void CpuBackend::conv_forward(const ConvDesc& d, const float* src, const float* wei,
                              const float* bia, float* dst) {
  // src (mb,ic,ih,iw), wei (oc,ic/g,kh,kw), bia (oc) -> dst (mb,oc,oh,ow)
  TS_CHECK(!d.bias || bia, "conv_forward: " + d.str() + " has a bias but bia is null");
  guarded(__FILE__, __LINE__, "conv_forward " + d.str(), [&] {
    auto& plan = impl_->conv_forward_plan(d);
    std::unordered_map<int, memory> args{{DNNL_ARG_SRC, impl_->bind(conv_src_md(d), src)},
                                         {DNNL_ARG_WEIGHTS, impl_->bind(conv_wei_md(d), wei)},
                                         {DNNL_ARG_DST, impl_->bind(conv_dst_md(d), dst)}};
    if (d.bias) args.emplace(DNNL_ARG_BIAS, impl_->bind(conv_bia_md(d), bia));
    impl_->execute(plan.prim, args);
  });
}

void CpuBackend::conv_backward_data(const ConvDesc& d, const float* diff_dst, const float* wei,
                                    float* diff_src) {
  // diff_dst (mb,oc,oh,ow), wei (oc,ic/g,kh,kw) -> diff_src (mb,ic,ih,iw)
  guarded(__FILE__, __LINE__, "conv_backward_data " + d.str(), [&] {
    auto& fwd = impl_->conv_forward_plan(d);
    auto& plan = find_or_plan(impl_->conv_bwd_data, d.str(), [&] {
      dnnl::convolution_backward_data::desc desc(dnnl::algorithm::convolution_direct,
                                                 conv_src_md(d), conv_wei_md(d), conv_dst_md(d),
                                                 conv_strides(d), conv_padding(d), conv_padding(d));
      return dnnl::convolution_backward_data::primitive_desc(desc, impl_->engine, fwd.pd);
    });
    impl_->execute(plan.prim, {{DNNL_ARG_DIFF_DST, impl_->bind(conv_dst_md(d), diff_dst)},
                               {DNNL_ARG_WEIGHTS, impl_->bind(conv_wei_md(d), wei)},
                               {DNNL_ARG_DIFF_SRC, impl_->bind(conv_src_md(d), diff_src)}});
  });
}

void CpuBackend::conv_backward_weights(const ConvDesc& d, const float* src, const float* diff_dst,
                                       float* diff_wei, float* diff_bia) {
  // src (mb,ic,ih,iw), diff_dst (mb,oc,oh,ow) -> diff_wei (oc,ic/g,kh,kw), diff_bia (oc)
  TS_CHECK(!d.bias || diff_bia,
           "conv_backward_weights: " + d.str() + " has a bias but diff_bia is null");
  guarded(__FILE__, __LINE__, "conv_backward_weights " + d.str(), [&] {
    auto& fwd = impl_->conv_forward_plan(d);
    auto& plan = find_or_plan(impl_->conv_bwd_weights, d.str(), [&] {
      auto desc = d.bias ? dnnl::convolution_backward_weights::desc(
                               dnnl::algorithm::convolution_direct, conv_src_md(d), conv_wei_md(d),
                               conv_bia_md(d), conv_dst_md(d), conv_strides(d), conv_padding(d),
                               conv_padding(d))
                         : dnnl::convolution_backward_weights::desc(
                               dnnl::algorithm::convolution_direct, conv_src_md(d), conv_wei_md(d),
                               conv_dst_md(d), conv_strides(d), conv_padding(d), conv_padding(d));
      return dnnl::convolution_backward_weights::primitive_desc(desc, impl_->engine, fwd.pd);
    });
    std::unordered_map<int, memory> args{
        {DNNL_ARG_SRC, impl_->bind(conv_src_md(d), src)},
        {DNNL_ARG_DIFF_DST, impl_->bind(conv_dst_md(d), diff_dst)},
        {DNNL_ARG_DIFF_WEIGHTS, impl_->bind(conv_wei_md(d), diff_wei)}};
    if (d.bias) args.emplace(DNNL_ARG_DIFF_BIAS, impl_->bind(conv_bia_md(d), diff_bia));
    impl_->execute(plan.prim, args);
  });
}

// ---- pooling --------------------------------------------------------------------------------
size_t CpuBackend::pool_workspace_bytes(const PoolDesc& d) const {
  if (d.kind != PoolKind::max) return 0;
  size_t bytes = 0;
  guarded(__FILE__, __LINE__, "pool_workspace_bytes " + d.str(),
          [&] { bytes = impl_->pool_forward_plan(d).pd.workspace_desc().get_size(); });
  return bytes;
}

void CpuBackend::pool_forward(const PoolDesc& d, const float* src, float* dst, void* workspace) {
  // src (mb,c,ih,iw) -> dst (mb,c,oh,ow); workspace: oneDNN's argmax record for max pooling
  TS_CHECK(d.kind != PoolKind::max || workspace,
           "pool_forward: max pooling needs a workspace: " + d.str());
  guarded(__FILE__, __LINE__, "pool_forward " + d.str(), [&] {
    auto& plan = impl_->pool_forward_plan(d);
    std::unordered_map<int, memory> args{{DNNL_ARG_SRC, impl_->bind(pool_src_md(d), src)},
                                         {DNNL_ARG_DST, impl_->bind(pool_dst_md(d), dst)}};
    if (d.kind == PoolKind::max)
      args.emplace(DNNL_ARG_WORKSPACE, impl_->bind(plan.pd.workspace_desc(), workspace));
    impl_->execute(plan.prim, args);
  });
}

void CpuBackend::pool_backward(const PoolDesc& d, const float* diff_dst, const void* workspace,
                               float* diff_src) {
  // diff_dst (mb,c,oh,ow) -> diff_src (mb,c,ih,iw)
  TS_CHECK(d.kind != PoolKind::max || workspace,
           "pool_backward: max pooling needs the forward workspace: " + d.str());
  guarded(__FILE__, __LINE__, "pool_backward " + d.str(), [&] {
    auto& fwd = impl_->pool_forward_plan(d);
    auto& plan = find_or_plan(impl_->pool_bwd, d.str(), [&] {
      dnnl::pooling_backward::desc desc(pool_algorithm(d), pool_src_md(d), pool_dst_md(d),
                                        {d.sh, d.sw}, {d.kh, d.kw}, {d.ph, d.pw}, {d.ph, d.pw});
      return dnnl::pooling_backward::primitive_desc(desc, impl_->engine, fwd.pd);
    });
    std::unordered_map<int, memory> args{
        {DNNL_ARG_DIFF_DST, impl_->bind(pool_dst_md(d), diff_dst)},
        {DNNL_ARG_DIFF_SRC, impl_->bind(pool_src_md(d), diff_src)}};
    if (d.kind == PoolKind::max)
      args.emplace(DNNL_ARG_WORKSPACE, impl_->bind(fwd.pd.workspace_desc(), workspace));
    impl_->execute(plan.prim, args);
  });
}

// ---- fully connected ------------------------------------------------------------------------
void CpuBackend::fc_forward(const FcDesc& d, const float* src, const float* wei, const float* bia,
                            float* dst) {
  // src (mb,ic), wei (oc,ic), bia (oc) -> dst (mb,oc)
  TS_CHECK(!d.bias || bia, "fc_forward: " + d.str() + " has a bias but bia is null");
  guarded(__FILE__, __LINE__, "fc_forward " + d.str(), [&] {
    auto& plan = impl_->fc_forward_plan(d);
    std::unordered_map<int, memory> args{{DNNL_ARG_SRC, impl_->bind(fc_src_md(d), src)},
                                         {DNNL_ARG_WEIGHTS, impl_->bind(fc_wei_md(d), wei)},
                                         {DNNL_ARG_DST, impl_->bind(fc_dst_md(d), dst)}};
    if (d.bias) args.emplace(DNNL_ARG_BIAS, impl_->bind(fc_bia_md(d), bia));
    impl_->execute(plan.prim, args);
  });
}

void CpuBackend::fc_backward_data(const FcDesc& d, const float* diff_dst, const float* wei,
                                  float* diff_src) {
  // diff_dst (mb,oc), wei (oc,ic) -> diff_src (mb,ic)
  guarded(__FILE__, __LINE__, "fc_backward_data " + d.str(), [&] {
    auto& fwd = impl_->fc_forward_plan(d);
    auto& plan = find_or_plan(impl_->fc_bwd_data, d.str(), [&] {
      dnnl::inner_product_backward_data::desc desc(fc_src_md(d), fc_wei_md(d), fc_dst_md(d));
      return dnnl::inner_product_backward_data::primitive_desc(desc, impl_->engine, fwd.pd);
    });
    impl_->execute(plan.prim, {{DNNL_ARG_DIFF_DST, impl_->bind(fc_dst_md(d), diff_dst)},
                               {DNNL_ARG_WEIGHTS, impl_->bind(fc_wei_md(d), wei)},
                               {DNNL_ARG_DIFF_SRC, impl_->bind(fc_src_md(d), diff_src)}});
  });
}

void CpuBackend::fc_backward_weights(const FcDesc& d, const float* src, const float* diff_dst,
                                     float* diff_wei, float* diff_bia) {
  // src (mb,ic), diff_dst (mb,oc) -> diff_wei (oc,ic), diff_bia (oc)
  TS_CHECK(!d.bias || diff_bia,
           "fc_backward_weights: " + d.str() + " has a bias but diff_bia is null");
  guarded(__FILE__, __LINE__, "fc_backward_weights " + d.str(), [&] {
    auto& fwd = impl_->fc_forward_plan(d);
    auto& plan = find_or_plan(impl_->fc_bwd_weights, d.str(), [&] {
      auto desc = d.bias ? dnnl::inner_product_backward_weights::desc(
                               fc_src_md(d), fc_wei_md(d), fc_bia_md(d), fc_dst_md(d))
                         : dnnl::inner_product_backward_weights::desc(fc_src_md(d), fc_wei_md(d),
                                                                      fc_dst_md(d));
      return dnnl::inner_product_backward_weights::primitive_desc(desc, impl_->engine, fwd.pd);
    });
    std::unordered_map<int, memory> args{
        {DNNL_ARG_SRC, impl_->bind(fc_src_md(d), src)},
        {DNNL_ARG_DIFF_DST, impl_->bind(fc_dst_md(d), diff_dst)},
        {DNNL_ARG_DIFF_WEIGHTS, impl_->bind(fc_wei_md(d), diff_wei)}};
    if (d.bias) args.emplace(DNNL_ARG_DIFF_BIAS, impl_->bind(fc_bia_md(d), diff_bia));
    impl_->execute(plan.prim, args);
  });
}

// ---- batch normalisation --------------------------------------------------------------------
void CpuBackend::batchnorm_forward_training(const BnDesc& d, const float* src, const float* scale,
                                            const float* shift, float* dst, float* mean,
                                            float* variance) {
  // src/dst (mb,c,h,w); scale, shift in; mean, variance (c) out (biased variance)
  guarded(__FILE__, __LINE__, "batchnorm_forward_training " + d.str(), [&] {
    auto& plan = impl_->bn_forward_training_plan(d);
    impl_->execute(plan.prim, {{DNNL_ARG_SRC, impl_->bind(bn_data_md(d), src)},
                               {DNNL_ARG_SCALE, impl_->bind(bn_channel_md(d), scale)},
                               {DNNL_ARG_SHIFT, impl_->bind(bn_channel_md(d), shift)},
                               {DNNL_ARG_DST, impl_->bind(bn_data_md(d), dst)},
                               {DNNL_ARG_MEAN, impl_->bind(bn_channel_md(d), mean)},
                               {DNNL_ARG_VARIANCE, impl_->bind(bn_channel_md(d), variance)}});
  });
}

void CpuBackend::batchnorm_forward_inference(const BnDesc& d, const float* src, const float* scale,
                                             const float* shift, const float* mean,
                                             const float* variance, float* dst) {
  // src/dst (mb,c,h,w); scale, shift, mean, variance (c) all in
  guarded(__FILE__, __LINE__, "batchnorm_forward_inference " + d.str(), [&] {
    auto& plan = find_or_plan(impl_->bn_fwd_inference, d.str(), [&] {
      dnnl::batch_normalization_forward::desc desc(
          dnnl::prop_kind::forward_inference, bn_data_md(d), d.eps,
          dnnl::normalization_flags::use_global_stats | dnnl::normalization_flags::use_scale |
              dnnl::normalization_flags::use_shift);
      return dnnl::batch_normalization_forward::primitive_desc(desc, impl_->engine);
    });
    impl_->execute(plan.prim, {{DNNL_ARG_SRC, impl_->bind(bn_data_md(d), src)},
                               {DNNL_ARG_SCALE, impl_->bind(bn_channel_md(d), scale)},
                               {DNNL_ARG_SHIFT, impl_->bind(bn_channel_md(d), shift)},
                               {DNNL_ARG_MEAN, impl_->bind(bn_channel_md(d), mean)},
                               {DNNL_ARG_VARIANCE, impl_->bind(bn_channel_md(d), variance)},
                               {DNNL_ARG_DST, impl_->bind(bn_data_md(d), dst)}});
  });
}

void CpuBackend::batchnorm_backward(const BnDesc& d, const float* src, const float* diff_dst,
                                    const float* scale, const float* mean, const float* variance,
                                    float* diff_src, float* diff_scale, float* diff_shift) {
  // src, diff_dst (mb,c,h,w); scale, mean, variance (c) -> diff_src, diff_scale, diff_shift
  guarded(__FILE__, __LINE__, "batchnorm_backward " + d.str(), [&] {
    auto& fwd = impl_->bn_forward_training_plan(d);
    auto& plan = find_or_plan(impl_->bn_bwd, d.str(), [&] {
      dnnl::batch_normalization_backward::desc desc(
          dnnl::prop_kind::backward, bn_data_md(d), bn_data_md(d), d.eps,
          dnnl::normalization_flags::use_scale | dnnl::normalization_flags::use_shift);
      return dnnl::batch_normalization_backward::primitive_desc(desc, impl_->engine, fwd.pd);
    });
    if (impl_->zero_shift.size() < static_cast<size_t>(d.c))
      impl_->zero_shift.assign(static_cast<size_t>(d.c), 0.0f);
    impl_->execute(plan.prim, {{DNNL_ARG_SRC, impl_->bind(bn_data_md(d), src)},
                               {DNNL_ARG_DIFF_DST, impl_->bind(bn_data_md(d), diff_dst)},
                               {DNNL_ARG_SCALE, impl_->bind(bn_channel_md(d), scale)},
                               {DNNL_ARG_SHIFT, impl_->bind(bn_channel_md(d), impl_->zero_shift.data())},
                               {DNNL_ARG_MEAN, impl_->bind(bn_channel_md(d), mean)},
                               {DNNL_ARG_VARIANCE, impl_->bind(bn_channel_md(d), variance)},
                               {DNNL_ARG_DIFF_SRC, impl_->bind(bn_data_md(d), diff_src)},
                               {DNNL_ARG_DIFF_SCALE, impl_->bind(bn_channel_md(d), diff_scale)},
                               {DNNL_ARG_DIFF_SHIFT, impl_->bind(bn_channel_md(d), diff_shift)}});
  });
}

// ---- activations ----------------------------------------------------------------------------
void CpuBackend::eltwise_forward(const EltwiseDesc& d, const float* src, float* dst) {
  guarded(__FILE__, __LINE__, "eltwise_forward " + d.str(), [&] {
    auto& plan = impl_->eltwise_forward_plan(d);
    impl_->execute(plan.prim, {{DNNL_ARG_SRC, impl_->bind(vector_md(d.n), src)},
                               {DNNL_ARG_DST, impl_->bind(vector_md(d.n), dst)}});
  });
}

void CpuBackend::eltwise_backward(const EltwiseDesc& d, const float* src, const float* dst,
                                  const float* diff_dst, float* diff_src) {
  guarded(__FILE__, __LINE__, "eltwise_backward " + d.str(), [&] {
    auto& fwd = impl_->eltwise_forward_plan(d);
    auto& plan = find_or_plan(impl_->eltwise_bwd, d.str(), [&] {
      dnnl::eltwise_backward::desc desc(eltwise_algorithm(d), vector_md(d.n), vector_md(d.n),
                                        eltwise_alpha(d), eltwise_beta(d));
      return dnnl::eltwise_backward::primitive_desc(desc, impl_->engine, fwd.pd);
    });
    // relu differentiates from src; logistic_use_dst_for_bwd from dst.
    const bool use_dst = d.kind == EltwiseKind::sigmoid;
    impl_->execute(plan.prim,
                   {{use_dst ? DNNL_ARG_DST : DNNL_ARG_SRC,
                     impl_->bind(vector_md(d.n), use_dst ? dst : src)},
                    {DNNL_ARG_DIFF_DST, impl_->bind(vector_md(d.n), diff_dst)},
                    {DNNL_ARG_DIFF_SRC, impl_->bind(vector_md(d.n), diff_src)}});
  });
}

// ---- losses ---------------------------------------------------------------------------------
float CpuBackend::softmax_xent_forward(int64_t mb, int64_t classes, const float* logits,
                                       const int32_t* labels, float* probs) {
  // logits (mb,classes) -> probs (mb,classes) by oneDNN softmax; the loss is computed from the
  // logits as max + log-sum-exp - logit[label], which stays finite where probs underflow to 0.
  for (int64_t n = 0; n < mb; ++n)
    TS_CHECK(labels[n] >= 0 && labels[n] < classes,
             "label " + std::to_string(labels[n]) + " of sample " + std::to_string(n) +
                 " is outside [0," + std::to_string(classes) + ")");
  const std::string key = "softmax:mb" + std::to_string(mb) + "_c" + std::to_string(classes);
  guarded(__FILE__, __LINE__, "softmax_xent_forward " + key, [&] {
    const memory::desc md = f32_md({mb, classes}, tag::nc);
    auto& plan = find_or_plan(impl_->softmax_fwd, key, [&] {
      dnnl::softmax_forward::desc desc(dnnl::prop_kind::forward_training, md, 1);
      return dnnl::softmax_forward::primitive_desc(desc, impl_->engine);
    });
    impl_->execute(plan.prim,
                   {{DNNL_ARG_SRC, impl_->bind(md, logits)}, {DNNL_ARG_DST, impl_->bind(md, probs)}});
  });
  double loss = 0.0;
#pragma omp parallel for reduction(+ : loss)
  for (int64_t n = 0; n < mb; ++n) {
    const float* z = logits + n * classes;
    double zmax = z[0];
    for (int64_t k = 1; k < classes; ++k) zmax = std::max(zmax, double(z[k]));
    double sum = 0.0;
    for (int64_t k = 0; k < classes; ++k) sum += std::exp(double(z[k]) - zmax);
    loss += zmax + std::log(sum) - double(z[labels[n]]);
  }
  return static_cast<float>(loss / double(mb));
}

void CpuBackend::softmax_xent_backward(int64_t mb, int64_t classes, const float* probs,
                                       const int32_t* labels, float* diff_logits) {
  // diff_logits = (probs - onehot(labels)) / mb
  const float inv_mb = 1.0f / static_cast<float>(mb);
#pragma omp parallel for
  for (int64_t n = 0; n < mb; ++n)
    for (int64_t k = 0; k < classes; ++k)
      diff_logits[n * classes + k] =
          (probs[n * classes + k] - (k == labels[n] ? 1.0f : 0.0f)) * inv_mb;
}

float CpuBackend::mse_forward(int64_t n, const float* pred, const float* target) {
  double sum = 0.0;
#pragma omp parallel for reduction(+ : sum)
  for (int64_t i = 0; i < n; ++i) {
    const double e = double(pred[i]) - double(target[i]);
    sum += e * e;
  }
  return static_cast<float>(sum / double(n));
}

void CpuBackend::mse_backward(int64_t n, const float* pred, const float* target,
                              float* diff_pred) {
  const float k = 2.0f / static_cast<float>(n);
#pragma omp parallel for
  for (int64_t i = 0; i < n; ++i) diff_pred[i] = k * (pred[i] - target[i]);
}

// ---- tensor plumbing ------------------------------------------------------------------------
void CpuBackend::add(int64_t n, const float* a, const float* b, float* dst) {
  const std::string key = "add:n" + std::to_string(n);
  guarded(__FILE__, __LINE__, key, [&] {
    const memory::desc md = vector_md(n);
    auto& plan = find_or_plan(impl_->add, key, [&] {
      dnnl::binary::desc desc(dnnl::algorithm::binary_add, md, md, md);
      return dnnl::binary::primitive_desc(desc, impl_->engine);
    });
    impl_->execute(plan.prim, {{DNNL_ARG_SRC_0, impl_->bind(md, a)},
                               {DNNL_ARG_SRC_1, impl_->bind(md, b)},
                               {DNNL_ARG_DST, impl_->bind(md, dst)}});
  });
}

namespace {
std::string concat_key(int64_t mb, int64_t hw, const std::vector<int64_t>& channels) {
  std::string key = "concat:mb" + std::to_string(mb) + "_hw" + std::to_string(hw) + "_c";
  for (size_t i = 0; i < channels.size(); ++i) {
    if (i) key += ',';
    key += std::to_string(channels[i]);
  }
  return key;
}
}  // namespace

void CpuBackend::concat_forward(int64_t mb, int64_t hw, const std::vector<int64_t>& channels,
                                const std::vector<const float*>& srcs, float* dst) {
  // srcs[i] (mb,channels[i],hw) -> dst (mb,sum channels,hw)
  TS_CHECK(!channels.empty() && channels.size() == srcs.size(),
           "concat_forward: channels and srcs must be non-empty and of equal length");
  const std::string key = concat_key(mb, hw, channels);
  guarded(__FILE__, __LINE__, key, [&] {
    std::vector<memory::desc> src_mds;
    int64_t total = 0;
    for (int64_t c : channels) {
      src_mds.push_back(f32_md({mb, c, hw}, tag::abc));
      total += c;
    }
    const memory::desc dst_md = f32_md({mb, total, hw}, tag::abc);
    auto& plan = find_or_plan(impl_->concat, key, [&] {
      return dnnl::concat::primitive_desc(dst_md, 1, src_mds, impl_->engine);
    });
    std::unordered_map<int, memory> args{{DNNL_ARG_DST, impl_->bind(dst_md, dst)}};
    for (size_t i = 0; i < srcs.size(); ++i)
      args.emplace(DNNL_ARG_MULTIPLE_SRC + int(i), impl_->bind(src_mds[i], srcs[i]));
    impl_->execute(plan.prim, args);
  });
}

void CpuBackend::concat_backward(int64_t mb, int64_t hw, const std::vector<int64_t>& channels,
                                 const float* diff_dst, const std::vector<float*>& diff_srcs) {
  // diff_dst (mb,sum channels,hw) -> diff_srcs[i] (mb,channels[i],hw): contiguous block copies
  TS_CHECK(channels.size() == diff_srcs.size(),
           "concat_backward: channels and diff_srcs differ in length");
  std::vector<int64_t> offset(channels.size(), 0);  // channel offset of input i
  int64_t total = 0;
  for (size_t i = 0; i < channels.size(); ++i) {
    offset[i] = total;
    total += channels[i];
  }
  const int64_t parts = static_cast<int64_t>(channels.size());
#pragma omp parallel for collapse(2)
  for (int64_t n = 0; n < mb; ++n)
    for (int64_t i = 0; i < parts; ++i)
      std::memcpy(diff_srcs[i] + n * channels[i] * hw, diff_dst + (n * total + offset[i]) * hw,
                  sizeof(float) * static_cast<size_t>(channels[i] * hw));
}

void CpuBackend::dropout_apply(int64_t n, const uint8_t* mask, float scale, const float* src,
                               float* dst) {
#pragma omp parallel for
  for (int64_t i = 0; i < n; ++i) dst[i] = mask[i] ? src[i] * scale : 0.0f;
}

void CpuBackend::sgd_step(int64_t n, float lr, float momentum, float weight_decay, bool nesterov,
                          float* weights, const float* grads, float* velocity) {
  //   g' = g + wd * w;  v = momentum * v + g';  w -= lr * (nesterov ? g' + momentum * v : v)
#pragma omp parallel for
  for (int64_t i = 0; i < n; ++i) {
    const float g = grads[i] + weight_decay * weights[i];
    const float v = momentum * velocity[i] + g;
    velocity[i] = v;
    weights[i] -= lr * (nesterov ? g + momentum * v : v);
  }
}

}  // namespace ts
