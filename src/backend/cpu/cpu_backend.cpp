// The oneDNN CPU backend (see cpu_backend.h). Plan once, execute many:
//
// * Plans. Each op looks up (or, the first time, builds) a plan for its descriptor string, the
//   precision and the layout of its input: the primitive descriptor, created with
//   format_tag::any for conv / fc so oneDNN picks its blocked layouts (nChw16c, OIhw16i16o, ...),
//   the primitive, and any workspace. Backward-data / backward-weights primitives are hinted by
//   the forward pd. Every primitive runs with scratchpad_mode::user on one scratchpad that grows
//   only while plans are created (the first step), so the timed loop allocates nothing.
// * Layouts. Buffers the Net registers (register_buffer) may hold a tensor in the layout a
//   primitive produced; `layouts` remembers, per registered address, the memory desc in which
//   the backend last wrote it. The next op uses it directly when it is the layout its pd wants,
//   else reorders into a plan-owned temporary. Pointers that are not registered (parameter
//   arenas, test vectors, layer-owned buffers) always hold plain fp32 NCHW: inputs are reordered
//   from plain, outputs written in plain (through a temporary where the pd's layout differs).
//   Ops written as plain loops (losses, dropout, concat, sgd) convert their inputs to plain first.
// * Precision. fp32, or bf16 mixed precision: conv and fc compute on bf16 activations and
//   weights with fp32 accumulation, conv activations (and their diffs) are stored as bf16,
//   fc outputs (logits) stay fp32, and everything the Net and optimizer own (weights, gradients,
//   BN statistics, the loss) is fp32. Weight gradients come back from oneDNN in fp32.
#include "backend/cpu/cpu_backend.h"

#include <omp.h>

#include <algorithm>
#include <cmath>
#include <cstdio>
#include <cstring>
#include <functional>
#include <unordered_map>
#include <vector>
#include <oneapi/dnnl/dnnl.hpp>

#include "backend/cpu/cpu_info.h"
#include "core/buffer.h"
#include "core/error.h"
#include "core/host_info.h"

namespace ts {
namespace {

using dnnl::memory;
using tag = dnnl::memory::format_tag;
using dt = dnnl::memory::data_type;
using Args = std::unordered_map<int, memory>;

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

// ---- memory descs ----
// The plain (row-major) layout of dims in data type t.
memory::desc plain_md(const memory::dims& dims, dt t) {
  static const tag by_rank[] = {tag::undef, tag::a, tag::ab, tag::abc, tag::abcd, tag::abcde};
  TS_CHECK(!dims.empty() && dims.size() <= 5, "cpu backend: unsupported tensor rank");
  return memory::desc(dims, t, by_rank[dims.size()]);
}
memory::desc f32_plain(const memory::dims& dims) { return plain_md(dims, dt::f32); }
memory::desc any_md(const memory::dims& dims, dt t) { return memory::desc(dims, t, tag::any); }
bool is_plain(const memory::desc& md) { return md == plain_md(md.dims(), md.data_type()); }

// A short text that identifies a layout (dims, data type, strides, inner blocks): part of the
// plan keys of ops that follow their input's layout.
std::string md_key(const memory::desc& md) {
  const dnnl_memory_desc_t& c = md.data;
  std::string k = "t" + std::to_string(int(c.data_type)) + ":";
  for (int i = 0; i < c.ndims; ++i) k += std::to_string(c.dims[i]) + (i + 1 < c.ndims ? "x" : "");
  if (c.format_kind == dnnl_blocked) {
    const dnnl_blocking_desc_t& b = c.format_desc.blocking;
    k += ":s";
    for (int i = 0; i < c.ndims; ++i) k += std::to_string(b.strides[i]) + ",";
    for (int i = 0; i < b.inner_nblks; ++i)
      k += "b" + std::to_string(b.inner_idxs[i]) + "x" + std::to_string(b.inner_blks[i]);
  }
  return k;
}

memory::dims conv_src_dims(const ConvDesc& d) { return {d.mb, d.ic, d.ih, d.iw}; }
memory::dims conv_dst_dims(const ConvDesc& d) { return {d.mb, d.oc, d.oh(), d.ow()}; }
// wei (oc, ic/g, kh, kw) is byte-for-byte goihw (g, oc/g, ic/g, kh, kw) when grouped.
memory::dims conv_wei_dims(const ConvDesc& d) {
  if (d.groups == 1) return {d.oc, d.ic, d.kh, d.kw};
  return {d.groups, d.oc / d.groups, d.ic / d.groups, d.kh, d.kw};
}
memory::dims conv_strides(const ConvDesc& d) { return {d.sh, d.sw}; }
// oneDNN checks oh == (ih + pl + pr - kh) / sh + 1 with integer division, so symmetric padding
// gives the same output size as ConvDesc::oh().
memory::dims conv_padding(const ConvDesc& d) { return {d.ph, d.pw}; }

memory::dims pool_src_dims(const PoolDesc& d) { return {d.mb, d.c, d.ih, d.iw}; }
memory::dims pool_dst_dims(const PoolDesc& d) { return {d.mb, d.c, d.oh(), d.ow()}; }
dnnl::algorithm pool_algorithm(const PoolDesc& d) {
  return d.kind == PoolKind::max ? dnnl::algorithm::pooling_max
                                 : dnnl::algorithm::pooling_avg_exclude_padding;
}

memory::dims bn_dims(const BnDesc& d) { return {d.mb, d.c, d.h, d.w}; }
memory::desc bn_channel_md(const BnDesc& d) { return f32_plain({d.c}); }

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

// A planned primitive: its descriptor (for memory descs, workspace and scratchpad) and the
// primitive; `aux` is a descriptor the plan depends on (pooling: the forward src layout).
template <typename Prim>
struct Plan {
  typename Prim::primitive_desc pd;
  Prim prim;
  memory::desc aux;
};

template <typename Prim>
using PlanCache = std::unordered_map<std::string, Plan<Prim>>;

}  // namespace

struct CpuBackend::Impl {
  dnnl::engine engine{dnnl::engine::kind::cpu, 0};
  dnnl::stream stream{engine};
  Precision precision = Precision::fp32;

  PlanCache<dnnl::convolution_forward> conv_fwd;
  PlanCache<dnnl::convolution_backward_data> conv_bwd_data;
  PlanCache<dnnl::convolution_backward_weights> conv_bwd_weights;
  PlanCache<dnnl::pooling_forward> pool_fwd;
  PlanCache<dnnl::pooling_backward> pool_bwd;
  PlanCache<dnnl::inner_product_forward> fc_fwd;
  PlanCache<dnnl::inner_product_backward_data> fc_bwd_data;
  PlanCache<dnnl::inner_product_backward_weights> fc_bwd_weights;
  PlanCache<dnnl::batch_normalization_forward> bn_fwd;
  PlanCache<dnnl::batch_normalization_backward> bn_bwd;
  PlanCache<dnnl::eltwise_forward> eltwise_fwd;
  PlanCache<dnnl::eltwise_backward> eltwise_bwd;
  PlanCache<dnnl::softmax_forward> softmax_fwd;
  PlanCache<dnnl::binary> binary;
  PlanCache<dnnl::concat> concat;
  std::unordered_map<std::string, dnnl::reorder> reorders;
  // Which forward plan a pooling backward belongs to: by the layer's workspace (max pooling) or
  // by descriptor (average pooling, whose backward needs no forward state).
  std::unordered_map<const void*, std::string> pool_fwd_by_workspace;
  std::unordered_map<std::string, std::string> pool_fwd_by_desc;

  // Registered buffers: capacity, and the layout of what the backend last wrote there
  // (absent = plain fp32).
  std::unordered_map<const void*, size_t> capacity;
  std::unordered_map<const void*, memory::desc> layouts;
  // Conversions of registered buffers made by fetch(), reused by every later op that wants the
  // same layout until the buffer is written again (forward and backward-weights both read a
  // conv's src; backward-data and backward-weights both read its diff_dst).
  std::unordered_map<const void*, std::unordered_map<std::string, memory>> converted;
  // Plan-owned temporaries (reorder targets, workspaces), by key; sized on first use.
  std::unordered_map<std::string, Buffer<char>> temps;
  Buffer<char> scratchpad;
  // oneDNN 2.6 batch-norm backward with use_shift lists SHIFT as an input although the
  // gradients do not depend on it; the table does not pass shift to backward, so bind zeros.
  std::vector<float> zero_shift;
  ReorderCounts counts;

  dt act_dt() const { return precision == Precision::bf16 ? dt::bf16 : dt::f32; }
  std::string prefix() const { return precision == Precision::bf16 ? "bf16/" : "f32/"; }

  dnnl::primitive_attr attr(bool relu = false) const {
    dnnl::primitive_attr a;
    a.set_scratchpad_mode(dnnl::scratchpad_mode::user);
    if (relu) {
      dnnl::post_ops ops;
      ops.append_eltwise(1.0f, dnnl::algorithm::eltwise_relu, 0.0f, 0.0f);
      a.set_post_ops(ops);
    }
    return a;
  }

  // Builds a plan once per key; the scratchpad grows here (plan time), never while executing.
  template <typename Prim, typename MakePd>
  Plan<Prim>& plan(PlanCache<Prim>& cache, const std::string& key, MakePd&& make_pd,
                   memory::desc aux = {}) {
    auto it = cache.find(key);
    if (it == cache.end()) {
      typename Prim::primitive_desc pd = make_pd();
      const size_t need = pd.scratchpad_desc().get_size();
      if (need > scratchpad.size()) scratchpad.resize(need);
      it = cache.emplace(key, Plan<Prim>{pd, Prim(pd), aux}).first;
    }
    return it->second;
  }

  void* temp(const std::string& key, size_t bytes) {
    Buffer<char>& b = temps[key];
    if (b.size() < bytes) b.resize(bytes);
    return b.data();
  }

  void run(const dnnl::primitive& prim, const memory::desc& scratchpad_md, Args args) {
    args.emplace(DNNL_ARG_SCRATCHPAD, memory(scratchpad_md, engine, scratchpad.data()));
    prim.execute(stream, args);
    stream.wait();
  }

  void reorder(const memory::desc& from, const void* src, const memory::desc& to, void* dst,
               bool weights) {
    const std::string key = md_key(from) + ">" + md_key(to);
    auto it = reorders.find(key);
    if (it == reorders.end())
      it = reorders.emplace(key, dnnl::reorder(dnnl::reorder::primitive_desc(engine, from, engine, to))).first;
    memory s(from, engine, const_cast<void*>(src)), d(to, engine, dst);
    it->second.execute(stream, s, d);
    stream.wait();
    (weights ? counts.weights : counts.activations)++;
  }

  // ptr's tensor changed (or went away): forget its layout and conversions.
  void wrote(const void* ptr) {
    layouts.erase(ptr);
    converted.erase(ptr);
  }

  // The layout in which ptr holds its tensor; `plain` describes its plain fp32 form.
  memory::desc layout_of(const void* ptr, const memory::desc& plain) const {
    auto it = layouts.find(ptr);
    return it == layouts.end() ? plain : it->second;
  }

  // A memory in layout `want` that holds the tensor at ptr (plain form `plain`): ptr itself when
  // it already is in that layout, else a reorder into the temporary `key`.
  memory fetch(const void* ptr, const memory::desc& plain, const memory::desc& want,
               std::string key, bool weights = false) {
    memory::desc cur = layout_of(ptr, plain);
    const void* p = ptr;
    if (cur == want) return memory(want, engine, const_cast<void*>(p));
    const bool registered = capacity.count(ptr) > 0;
    std::string want_key;
    if (registered) {
      want_key = md_key(want);
      auto hit = converted.find(ptr);
      if (hit != converted.end()) {
        auto it = hit->second.find(want_key);
        if (it != hit->second.end()) return it->second;
      }
      // A temporary of this buffer's own, so the cached conversion stays valid.
      char address[32];
      std::snprintf(address, sizeof address, "%p", ptr);
      key = std::string("cvt/") + address + "/" + want_key;
    }
    memory m = convert(p, cur, want, key, weights);
    if (registered) converted[ptr].emplace(want_key, m);
    return m;
  }

  memory convert(const void* p, memory::desc cur, const memory::desc& want, const std::string& key,
                 bool weights) {
    if (cur.dims() != want.dims()) {
      // Same tensor, other logical dims (fc reading a (mb,c,h,w) tensor as (mb,c*h*w)): via the
      // plain form, whose bytes the two shapes share.
      if (!is_plain(cur)) {
        const memory::desc flat = plain_md(cur.dims(), cur.data_type());
        void* t = temp(key + "/flat", flat.get_size());
        reorder(cur, p, flat, t, weights);
        p = t;
      }
      cur = plain_md(want.dims(), cur.data_type());
      if (cur == want) return memory(want, engine, const_cast<void*>(p));
    }
    void* t = temp(key, want.get_size());
    reorder(cur, p, want, t, weights);
    return memory(want, engine, t);
  }

  // Where an op writes a result produced in layout `md` for the caller's ptr: ptr itself when it
  // is registered with room for that layout (or md is plain fp32), else a temporary that
  // finish() reorders into ptr's plain form.
  struct Out {
    memory mem;
    void* ptr;
    bool via_temp;
  };
  Out output(void* ptr, const memory::desc& md, const std::string& key) {
    const memory::desc plain = f32_plain(md.dims());
    if (md == plain) {
      wrote(ptr);
      return {memory(md, engine, ptr), ptr, false};
    }
    auto cap = capacity.find(ptr);
    if (cap != capacity.end() && cap->second >= md.get_size()) {
      wrote(ptr);
      layouts[ptr] = md;
      return {memory(md, engine, ptr), ptr, false};
    }
    return {memory(md, engine, temp(key, md.get_size())), ptr, true};
  }
  void finish(const Out& out, bool weights = false) {
    if (!out.via_temp) return;
    const memory::desc md = out.mem.get_desc();
    reorder(md, out.mem.get_data_handle(), f32_plain(md.dims()), out.ptr, weights);
    wrote(out.ptr);
  }

  // Converts a registered buffer to plain fp32 in place (n logical values).
  void make_plain(float* ptr, int64_t n) {
    auto it = layouts.find(ptr);
    if (it == layouts.end()) return;
    const memory::desc md = it->second;
    const memory::desc plain = f32_plain(md.dims());
    TS_CHECK(plain.get_size() == static_cast<size_t>(n) * sizeof(float),
             "cpu backend: make_plain of " + std::to_string(n) + " values, but the buffer holds " +
                 md_key(md));
    void* t = temp("make_plain", plain.get_size());
    reorder(md, ptr, plain, t, false);
    std::memcpy(ptr, t, plain.get_size());
    layouts.erase(it);
  }

  // ---- plans shared by forward and backward ----
  Plan<dnnl::convolution_forward>& conv_forward_plan(const ConvDesc& d) {
    return plan(conv_fwd, prefix() + d.str(), [&] {
      const dt t = act_dt();
      const memory::desc src = any_md(conv_src_dims(d), t), wei = any_md(conv_wei_dims(d), t),
                         dst = any_md(conv_dst_dims(d), t);
      auto desc = d.bias ? dnnl::convolution_forward::desc(
                               dnnl::prop_kind::forward_training, dnnl::algorithm::convolution_direct,
                               src, wei, f32_plain({d.oc}), dst, conv_strides(d), conv_padding(d),
                               conv_padding(d))
                         : dnnl::convolution_forward::desc(
                               dnnl::prop_kind::forward_training, dnnl::algorithm::convolution_direct,
                               src, wei, dst, conv_strides(d), conv_padding(d), conv_padding(d));
      return dnnl::convolution_forward::primitive_desc(desc, attr(d.relu), engine);
    });
  }

  Plan<dnnl::inner_product_forward>& fc_forward_plan(const FcDesc& d) {
    return plan(fc_fwd, prefix() + d.str(), [&] {
      const dt t = act_dt();
      // The output (logits, or the input of the next fc) stays fp32.
      const memory::desc src = any_md({d.mb, d.ic}, t), wei = any_md({d.oc, d.ic}, t),
                         dst = any_md({d.mb, d.oc}, dt::f32);
      auto desc = d.bias ? dnnl::inner_product_forward::desc(dnnl::prop_kind::forward_training,
                                                             src, wei, f32_plain({d.oc}), dst)
                         : dnnl::inner_product_forward::desc(dnnl::prop_kind::forward_training,
                                                             src, wei, dst);
      return dnnl::inner_product_forward::primitive_desc(desc, attr(), engine);
    });
  }

  Plan<dnnl::pooling_forward>& pool_forward_plan(const PoolDesc& d, const memory::desc& src) {
    return plan(pool_fwd, prefix() + d.str() + "/" + md_key(src), [&] {
      dnnl::pooling_forward::desc desc(dnnl::prop_kind::forward_training, pool_algorithm(d), src,
                                       any_md(pool_dst_dims(d), src.data_type()), {d.sh, d.sw},
                                       {d.kh, d.kw}, {d.ph, d.pw}, {d.ph, d.pw});
      return dnnl::pooling_forward::primitive_desc(desc, attr(), engine);
    }, src);
  }

  // Batch norm on data layout md; relu: fused ReLU (training: fuse_norm_relu, which needs a
  // workspace, the plan's temporary).
  Plan<dnnl::batch_normalization_forward>& bn_forward_plan(const BnDesc& d, const memory::desc& md,
                                                           bool training, bool relu) {
    const std::string key = prefix() + d.str() + (training ? "/train/" : "/infer/") + (relu ? "relu/" : "") + md_key(md);
    return plan(bn_fwd, key, [&] {
      auto flags = dnnl::normalization_flags::use_scale | dnnl::normalization_flags::use_shift;
      if (!training) flags |= dnnl::normalization_flags::use_global_stats;
      if (relu) flags |= dnnl::normalization_flags::fuse_norm_relu;
      dnnl::batch_normalization_forward::desc desc(
          training ? dnnl::prop_kind::forward_training : dnnl::prop_kind::forward_inference, md,
          d.eps, flags);
      return dnnl::batch_normalization_forward::primitive_desc(desc, attr(), engine);
    });
  }

  Plan<dnnl::eltwise_forward>& eltwise_forward_plan(const EltwiseDesc& d, const memory::desc& md) {
    return plan(eltwise_fwd, prefix() + d.str() + "/" + md_key(md), [&] {
      dnnl::eltwise_forward::desc desc(dnnl::prop_kind::forward_training, eltwise_algorithm(d), md,
                                       eltwise_alpha(d), eltwise_beta(d));
      return dnnl::eltwise_forward::primitive_desc(desc, attr(), engine);
    });
  }

  // dst = a + b [then relu], in a's layout.
  void binary_add(int64_t n, const float* a, const float* b, float* dst, bool relu) {
    const memory::desc md = layout_of(a, f32_plain({n}));
    const std::string key = prefix() + (relu ? "add_relu/" : "add/") + md_key(md);
    auto& p = plan(binary, key, [&] {
      dnnl::binary::desc desc(dnnl::algorithm::binary_add, md, md, md);
      return dnnl::binary::primitive_desc(desc, attr(relu), engine);
    });
    Args args{{DNNL_ARG_SRC_0, memory(md, engine, const_cast<float*>(a))},
              {DNNL_ARG_SRC_1, fetch(b, f32_plain({n}), md, key + "/b")}};
    auto out = output(dst, md, key + "/dst");
    args.emplace(DNNL_ARG_DST, out.mem);
    run(p.prim, p.pd.scratchpad_desc(), std::move(args));
    finish(out);
  }
};

CpuBackend::CpuBackend() {
  guarded(__FILE__, __LINE__, "creating the cpu engine and stream",
          [&] { impl_ = std::make_unique<Impl>(); });
}

CpuBackend::~CpuBackend() = default;

DeviceDescription CpuBackend::describe() const {
  DeviceDescription d;
  d.backend = "cpu";
  d.device = "cpu";
  d.name = host_cpu_model();
  d.isa = onednn_isa();
  d.generation = "none";
  d.memory_bytes = host_memory_bytes();
  d.compute_units = host_hardware_threads();
  d.bf16_native = onednn_bf16_native();
  d.libraries = {{"onednn", onednn_version()}};
  return d;
}

bool CpuBackend::supports(Op, Precision precision) const {
  // bf16: oneDNN computes it natively with avx512_bf16 (or AMX) and emulates it on plain
  // AVX-512 (avx512_core); `trainscale info` says which (bf16_native). fp16/tf32: cuda only.
  if (precision == Precision::fp32) return true;
  if (precision != Precision::bf16) return false;
  const auto isa = dnnl::get_effective_cpu_isa();
  return isa == dnnl::cpu_isa::avx512_core || isa == dnnl::cpu_isa::avx512_core_vnni ||
         isa == dnnl::cpu_isa::avx512_core_bf16 || isa == dnnl::cpu_isa::avx512_core_amx;
}

void CpuBackend::set_precision(Precision precision) {
  if (!supports(Op::conv, precision))
    throw ConfigError(std::string("backend cpu does not compute in '") + precision_name(precision) +
                      "' on this machine; accepted: fp32" +
                      (supports(Op::conv, Precision::bf16) ? ", bf16" : "") +
                      (precision == Precision::fp16 || precision == Precision::tf32
                           ? " (fp16 and tf32 need backend cuda)"
                           : " (bf16 needs a CPU with AVX-512)"));
  precision_ = precision;
  impl_->precision = precision;
}

void CpuBackend::set_threads(int threads) {
  TS_CHECK(threads >= 1, "cpu backend: threads must be >= 1, got " + std::to_string(threads));
  omp_set_num_threads(threads);
}

CpuBackend::ReorderCounts CpuBackend::reorder_counts() const { return impl_->counts; }

// ---- activation buffers ---------------------------------------------------------------------
size_t CpuBackend::activation_bytes(int64_t mb, const Shape& per_sample) const {
  // Room for the channel dimension padded to the largest block (16) in fp32; bf16 needs half.
  if (per_sample.rank() < 1) return static_cast<size_t>(mb) * sizeof(float);
  const int64_t channels = (per_sample[0] + 15) / 16 * 16;
  const int64_t rest = per_sample.numel() / std::max<int64_t>(per_sample[0], 1);
  return static_cast<size_t>(mb * channels * rest) * sizeof(float);
}

void CpuBackend::register_buffer(const void* ptr, size_t bytes) {
  if (!ptr) return;
  impl_->capacity[ptr] = bytes;
  impl_->wrote(ptr);
}

void CpuBackend::unregister_buffer(const void* ptr) {
  impl_->capacity.erase(ptr);
  impl_->wrote(ptr);
}

void CpuBackend::mark_plain(const void* ptr) { impl_->wrote(ptr); }

void CpuBackend::make_plain(float* ptr, int64_t n) {
  guarded(__FILE__, __LINE__, "make_plain", [&] { impl_->make_plain(ptr, n); });
}

// ---- convolution ----------------------------------------------------------------------------
void CpuBackend::conv_forward(const ConvDesc& d, const float* src, const float* wei,
                              const float* bia, float* dst) {
  // src (mb,ic,ih,iw), wei (oc,ic/g,kh,kw), bia (oc) -> dst (mb,oc,oh,ow) [relu'd when d.relu]
  TS_CHECK(!d.bias || bia, "conv_forward: " + d.str() + " has a bias but bia is null");
  guarded(__FILE__, __LINE__, "conv_forward " + d.str(), [&] {
    Impl& m = *impl_;
    auto& p = m.conv_forward_plan(d);
    const std::string key = m.prefix() + d.str();
    Args args{{DNNL_ARG_SRC, m.fetch(src, f32_plain(conv_src_dims(d)), p.pd.src_desc(), key + "/src")},
              {DNNL_ARG_WEIGHTS, m.fetch(wei, f32_plain(conv_wei_dims(d)), p.pd.weights_desc(), key + "/wei", true)}};
    if (d.bias) args.emplace(DNNL_ARG_BIAS, memory(f32_plain({d.oc}), m.engine, const_cast<float*>(bia)));
    auto out = m.output(dst, p.pd.dst_desc(), key + "/dst");
    args.emplace(DNNL_ARG_DST, out.mem);
    m.run(p.prim, p.pd.scratchpad_desc(), std::move(args));
    m.finish(out);
  });
}

void CpuBackend::conv_backward_data(const ConvDesc& d, const float* diff_dst, const float* wei,
                                    float* diff_src) {
  // diff_dst (mb,oc,oh,ow), wei (oc,ic/g,kh,kw) -> diff_src (mb,ic,ih,iw); d.relu is the
  // forward's concern only (the ReLU's backward ran before this).
  guarded(__FILE__, __LINE__, "conv_backward_data " + d.str(), [&] {
    Impl& m = *impl_;
    auto& fwd = m.conv_forward_plan(d);
    const std::string key = m.prefix() + d.str();
    auto& p = m.plan(m.conv_bwd_data, key, [&] {
      const dt t = m.act_dt();
      dnnl::convolution_backward_data::desc desc(
          dnnl::algorithm::convolution_direct, any_md(conv_src_dims(d), t),
          any_md(conv_wei_dims(d), t), any_md(conv_dst_dims(d), t), conv_strides(d),
          conv_padding(d), conv_padding(d));
      return dnnl::convolution_backward_data::primitive_desc(desc, m.attr(), m.engine, fwd.pd);
    });
    Args args{{DNNL_ARG_DIFF_DST, m.fetch(diff_dst, f32_plain(conv_dst_dims(d)), p.pd.diff_dst_desc(), key + "/bd_diff_dst")},
              {DNNL_ARG_WEIGHTS, m.fetch(wei, f32_plain(conv_wei_dims(d)), p.pd.weights_desc(), key + "/bd_wei", true)}};
    auto out = m.output(diff_src, p.pd.diff_src_desc(), key + "/bd_diff_src");
    args.emplace(DNNL_ARG_DIFF_SRC, out.mem);
    m.run(p.prim, p.pd.scratchpad_desc(), std::move(args));
    m.finish(out);
  });
}

void CpuBackend::conv_backward_weights(const ConvDesc& d, const float* src, const float* diff_dst,
                                       float* diff_wei, float* diff_bia) {
  // src (mb,ic,ih,iw), diff_dst (mb,oc,oh,ow) -> diff_wei (oc,ic/g,kh,kw), diff_bia (oc), fp32
  TS_CHECK(!d.bias || diff_bia,
           "conv_backward_weights: " + d.str() + " has a bias but diff_bia is null");
  guarded(__FILE__, __LINE__, "conv_backward_weights " + d.str(), [&] {
    Impl& m = *impl_;
    auto& fwd = m.conv_forward_plan(d);
    const std::string key = m.prefix() + d.str();
    auto& p = m.plan(m.conv_bwd_weights, key, [&] {
      const dt t = m.act_dt();
      const memory::desc src_md = any_md(conv_src_dims(d), t),
                         wei_md = any_md(conv_wei_dims(d), dt::f32),
                         dst_md = any_md(conv_dst_dims(d), t);
      auto desc = d.bias ? dnnl::convolution_backward_weights::desc(
                               dnnl::algorithm::convolution_direct, src_md, wei_md,
                               f32_plain({d.oc}), dst_md, conv_strides(d), conv_padding(d),
                               conv_padding(d))
                         : dnnl::convolution_backward_weights::desc(
                               dnnl::algorithm::convolution_direct, src_md, wei_md, dst_md,
                               conv_strides(d), conv_padding(d), conv_padding(d));
      return dnnl::convolution_backward_weights::primitive_desc(desc, m.attr(), m.engine, fwd.pd);
    });
    Args args{{DNNL_ARG_SRC, m.fetch(src, f32_plain(conv_src_dims(d)), p.pd.src_desc(), key + "/bw_src")},
              {DNNL_ARG_DIFF_DST, m.fetch(diff_dst, f32_plain(conv_dst_dims(d)), p.pd.diff_dst_desc(), key + "/bw_diff_dst")}};
    // diff_wei goes to the (unregistered) gradient arena: plain fp32, via a temporary when
    // oneDNN chose a blocked weights layout.
    Impl::Out out = m.output(diff_wei, p.pd.diff_weights_desc(), key + "/bw_diff_wei");
    // output()'s plain form has the pd's dims: for grouped convs the 5-D goihw dims, byte for
    // byte the caller's (oc, ic/g, kh, kw).
    args.emplace(DNNL_ARG_DIFF_WEIGHTS, out.mem);
    if (d.bias) args.emplace(DNNL_ARG_DIFF_BIAS, memory(f32_plain({d.oc}), m.engine, diff_bia));
    m.run(p.prim, p.pd.scratchpad_desc(), std::move(args));
    m.finish(out, true);
  });
}

// ---- pooling --------------------------------------------------------------------------------
size_t CpuBackend::pool_workspace_bytes(const PoolDesc& d) const {
  // An upper bound for any layout oneDNN may pick (the workspace follows dst's layout, channels
  // padded to 16, at most 4 bytes per element); the plan checks its real size against it.
  if (d.kind != PoolKind::max) return 0;
  return static_cast<size_t>(d.mb * ((d.c + 15) / 16 * 16) * d.oh() * d.ow()) * 4;
}

void CpuBackend::pool_forward(const PoolDesc& d, const float* src, float* dst, void* workspace) {
  // src (mb,c,ih,iw) -> dst (mb,c,oh,ow); workspace: oneDNN's argmax record for max pooling,
  // in the caller's buffer of pool_workspace_bytes(d)
  TS_CHECK(d.kind != PoolKind::max || workspace,
           "pool_forward: max pooling needs a workspace: " + d.str());
  guarded(__FILE__, __LINE__, "pool_forward " + d.str(), [&] {
    Impl& m = *impl_;
    const memory::desc src_md = m.layout_of(src, f32_plain(pool_src_dims(d)));
    auto& p = m.pool_forward_plan(d, src_md);
    const std::string key = m.prefix() + d.str() + "/" + md_key(src_md);
    Args args{{DNNL_ARG_SRC, memory(src_md, m.engine, const_cast<float*>(src))}};
    auto out = m.output(dst, p.pd.dst_desc(), key + "/dst");
    args.emplace(DNNL_ARG_DST, out.mem);
    if (d.kind == PoolKind::max) {
      TS_CHECK(p.pd.workspace_desc().get_size() <= pool_workspace_bytes(d),
               "pool_forward: oneDNN's workspace exceeds pool_workspace_bytes for " + d.str());
      args.emplace(DNNL_ARG_WORKSPACE, memory(p.pd.workspace_desc(), m.engine, workspace));
      m.pool_fwd_by_workspace[workspace] = key;
    } else {
      m.pool_fwd_by_desc[m.prefix() + d.str()] = key;
    }
    m.run(p.prim, p.pd.scratchpad_desc(), std::move(args));
    m.finish(out);
  });
}

void CpuBackend::pool_backward(const PoolDesc& d, const float* diff_dst, const void* workspace,
                               float* diff_src) {
  // diff_dst (mb,c,oh,ow) -> diff_src (mb,c,ih,iw), in the layouts of the forward's dst and src
  TS_CHECK(d.kind != PoolKind::max || workspace,
           "pool_backward: max pooling needs the forward workspace: " + d.str());
  guarded(__FILE__, __LINE__, "pool_backward " + d.str(), [&] {
    Impl& m = *impl_;
    std::string fwd_key;
    if (d.kind == PoolKind::max) {
      auto it = m.pool_fwd_by_workspace.find(workspace);
      TS_CHECK(it != m.pool_fwd_by_workspace.end(),
               "pool_backward: no pool_forward ran with this workspace: " + d.str());
      fwd_key = it->second;
    } else {
      auto it = m.pool_fwd_by_desc.find(m.prefix() + d.str());
      if (it == m.pool_fwd_by_desc.end()) {
        // Average pooling needs no forward state: plan the forward on plain data.
        m.pool_forward_plan(d, f32_plain(pool_src_dims(d)));
        fwd_key = m.prefix() + d.str() + "/" + md_key(f32_plain(pool_src_dims(d)));
      } else {
        fwd_key = it->second;
      }
    }
    auto& fwd = m.pool_fwd.at(fwd_key);
    auto& p = m.plan(m.pool_bwd, fwd_key, [&] {
      dnnl::pooling_backward::desc desc(pool_algorithm(d), fwd.aux, fwd.pd.dst_desc(),
                                        {d.sh, d.sw}, {d.kh, d.kw}, {d.ph, d.pw}, {d.ph, d.pw});
      return dnnl::pooling_backward::primitive_desc(desc, m.attr(), m.engine, fwd.pd);
    });
    Args args{{DNNL_ARG_DIFF_DST, m.fetch(diff_dst, f32_plain(pool_dst_dims(d)), p.pd.diff_dst_desc(), fwd_key + "/diff_dst")}};
    auto out = m.output(diff_src, p.pd.diff_src_desc(), fwd_key + "/diff_src");
    args.emplace(DNNL_ARG_DIFF_SRC, out.mem);
    if (d.kind == PoolKind::max)
      args.emplace(DNNL_ARG_WORKSPACE, memory(fwd.pd.workspace_desc(), m.engine, const_cast<void*>(workspace)));
    m.run(p.prim, p.pd.scratchpad_desc(), std::move(args));
    m.finish(out);
  });
}

// ---- fully connected ------------------------------------------------------------------------
void CpuBackend::fc_forward(const FcDesc& d, const float* src, const float* wei, const float* bia,
                            float* dst) {
  // src (mb,ic), wei (oc,ic), bia (oc) -> dst (mb,oc), fp32
  TS_CHECK(!d.bias || bia, "fc_forward: " + d.str() + " has a bias but bia is null");
  guarded(__FILE__, __LINE__, "fc_forward " + d.str(), [&] {
    Impl& m = *impl_;
    auto& p = m.fc_forward_plan(d);
    const std::string key = m.prefix() + d.str();
    Args args{{DNNL_ARG_SRC, m.fetch(src, f32_plain({d.mb, d.ic}), p.pd.src_desc(), key + "/src")},
              {DNNL_ARG_WEIGHTS, m.fetch(wei, f32_plain({d.oc, d.ic}), p.pd.weights_desc(), key + "/wei", true)}};
    if (d.bias) args.emplace(DNNL_ARG_BIAS, memory(f32_plain({d.oc}), m.engine, const_cast<float*>(bia)));
    auto out = m.output(dst, p.pd.dst_desc(), key + "/dst");
    args.emplace(DNNL_ARG_DST, out.mem);
    m.run(p.prim, p.pd.scratchpad_desc(), std::move(args));
    m.finish(out);
  });
}

void CpuBackend::fc_backward_data(const FcDesc& d, const float* diff_dst, const float* wei,
                                  float* diff_src) {
  // diff_dst (mb,oc), wei (oc,ic) -> diff_src (mb,ic)
  guarded(__FILE__, __LINE__, "fc_backward_data " + d.str(), [&] {
    Impl& m = *impl_;
    auto& fwd = m.fc_forward_plan(d);
    const std::string key = m.prefix() + d.str();
    auto& p = m.plan(m.fc_bwd_data, key, [&] {
      const dt t = m.act_dt();
      dnnl::inner_product_backward_data::desc desc(any_md({d.mb, d.ic}, t), any_md({d.oc, d.ic}, t),
                                                   any_md({d.mb, d.oc}, t));
      return dnnl::inner_product_backward_data::primitive_desc(desc, m.attr(), m.engine, fwd.pd);
    });
    Args args{{DNNL_ARG_DIFF_DST, m.fetch(diff_dst, f32_plain({d.mb, d.oc}), p.pd.diff_dst_desc(), key + "/bd_diff_dst")},
              {DNNL_ARG_WEIGHTS, m.fetch(wei, f32_plain({d.oc, d.ic}), p.pd.weights_desc(), key + "/bd_wei", true)}};
    auto out = m.output(diff_src, p.pd.diff_src_desc(), key + "/bd_diff_src");
    args.emplace(DNNL_ARG_DIFF_SRC, out.mem);
    m.run(p.prim, p.pd.scratchpad_desc(), std::move(args));
    m.finish(out);
  });
}

void CpuBackend::fc_backward_weights(const FcDesc& d, const float* src, const float* diff_dst,
                                     float* diff_wei, float* diff_bia) {
  // src (mb,ic), diff_dst (mb,oc) -> diff_wei (oc,ic), diff_bia (oc), fp32
  TS_CHECK(!d.bias || diff_bia,
           "fc_backward_weights: " + d.str() + " has a bias but diff_bia is null");
  guarded(__FILE__, __LINE__, "fc_backward_weights " + d.str(), [&] {
    Impl& m = *impl_;
    auto& fwd = m.fc_forward_plan(d);
    const std::string key = m.prefix() + d.str();
    auto& p = m.plan(m.fc_bwd_weights, key, [&] {
      const dt t = m.act_dt();
      const memory::desc src_md = any_md({d.mb, d.ic}, t), wei_md = any_md({d.oc, d.ic}, dt::f32),
                         dst_md = any_md({d.mb, d.oc}, t);
      auto desc = d.bias ? dnnl::inner_product_backward_weights::desc(src_md, wei_md,
                                                                      f32_plain({d.oc}), dst_md)
                         : dnnl::inner_product_backward_weights::desc(src_md, wei_md, dst_md);
      return dnnl::inner_product_backward_weights::primitive_desc(desc, m.attr(), m.engine, fwd.pd);
    });
    Args args{{DNNL_ARG_SRC, m.fetch(src, f32_plain({d.mb, d.ic}), p.pd.src_desc(), key + "/bw_src")},
              {DNNL_ARG_DIFF_DST, m.fetch(diff_dst, f32_plain({d.mb, d.oc}), p.pd.diff_dst_desc(), key + "/bw_diff_dst")}};
    auto out = m.output(diff_wei, p.pd.diff_weights_desc(), key + "/bw_diff_wei");
    args.emplace(DNNL_ARG_DIFF_WEIGHTS, out.mem);
    if (d.bias) args.emplace(DNNL_ARG_DIFF_BIAS, memory(f32_plain({d.oc}), m.engine, diff_bia));
    m.run(p.prim, p.pd.scratchpad_desc(), std::move(args));
    m.finish(out, true);
  });
}

// ---- batch normalisation --------------------------------------------------------------------
// Batch norm runs in the layout (and data type) of its input; scale/shift/mean/variance are fp32.
void CpuBackend::batchnorm_forward_training(const BnDesc& d, const float* src, const float* scale,
                                            const float* shift, float* dst, float* mean,
                                            float* variance) {
  // src/dst (mb,c,h,w); scale, shift in; mean, variance (c) out (biased variance)
  guarded(__FILE__, __LINE__, "batchnorm_forward_training " + d.str(), [&] {
    Impl& m = *impl_;
    const memory::desc md = m.layout_of(src, f32_plain(bn_dims(d)));
    auto& p = m.bn_forward_plan(d, md, true, d.relu);
    const memory::desc ch = bn_channel_md(d);
    Args args{{DNNL_ARG_SRC, memory(md, m.engine, const_cast<float*>(src))},
              {DNNL_ARG_SCALE, memory(ch, m.engine, const_cast<float*>(scale))},
              {DNNL_ARG_SHIFT, memory(ch, m.engine, const_cast<float*>(shift))},
              {DNNL_ARG_MEAN, memory(ch, m.engine, mean)},
              {DNNL_ARG_VARIANCE, memory(ch, m.engine, variance)}};
    if (d.relu)  // fuse_norm_relu records its ReLU mask; the ReLU's backward reads dst instead
      args.emplace(DNNL_ARG_WORKSPACE,
                   memory(p.pd.workspace_desc(), m.engine,
                          m.temp("bn_ws/" + d.str() + md_key(md), p.pd.workspace_desc().get_size())));
    auto out = m.output(dst, p.pd.dst_desc(), m.prefix() + d.str() + "/dst");
    args.emplace(DNNL_ARG_DST, out.mem);
    m.run(p.prim, p.pd.scratchpad_desc(), std::move(args));
    m.finish(out);
  });
}

void CpuBackend::batchnorm_forward_inference(const BnDesc& d, const float* src, const float* scale,
                                             const float* shift, const float* mean,
                                             const float* variance, float* dst) {
  // src/dst (mb,c,h,w); scale, shift, mean, variance (c) all in
  guarded(__FILE__, __LINE__, "batchnorm_forward_inference " + d.str(), [&] {
    Impl& m = *impl_;
    const memory::desc md = m.layout_of(src, f32_plain(bn_dims(d)));
    auto& p = m.bn_forward_plan(d, md, false, d.relu);
    const memory::desc ch = bn_channel_md(d);
    Args args{{DNNL_ARG_SRC, memory(md, m.engine, const_cast<float*>(src))},
              {DNNL_ARG_SCALE, memory(ch, m.engine, const_cast<float*>(scale))},
              {DNNL_ARG_SHIFT, memory(ch, m.engine, const_cast<float*>(shift))},
              {DNNL_ARG_MEAN, memory(ch, m.engine, const_cast<float*>(mean))},
              {DNNL_ARG_VARIANCE, memory(ch, m.engine, const_cast<float*>(variance))}};
    auto out = m.output(dst, p.pd.dst_desc(), m.prefix() + d.str() + "/infer_dst");
    args.emplace(DNNL_ARG_DST, out.mem);
    m.run(p.prim, p.pd.scratchpad_desc(), std::move(args));
    m.finish(out);
  });
}

void CpuBackend::batchnorm_backward(const BnDesc& d, const float* src, const float* diff_dst,
                                    const float* scale, const float* mean, const float* variance,
                                    float* diff_src, float* diff_scale, float* diff_shift) {
  // src, diff_dst (mb,c,h,w); scale, mean, variance (c) -> diff_src, diff_scale, diff_shift.
  // The backward of batch norm alone: a fused ReLU's backward already ran (the ReLU layer's).
  guarded(__FILE__, __LINE__, "batchnorm_backward " + d.str(), [&] {
    Impl& m = *impl_;
    const memory::desc md = m.layout_of(src, f32_plain(bn_dims(d)));
    const auto flags = dnnl::normalization_flags::use_scale | dnnl::normalization_flags::use_shift;
    const std::string key = m.prefix() + d.str() + "/bwd/" + md_key(md);
    auto& fwd = m.bn_forward_plan(d, md, true, false);
    auto& p = m.plan(m.bn_bwd, key, [&] {
      dnnl::batch_normalization_backward::desc desc(dnnl::prop_kind::backward, md, md, d.eps, flags);
      return dnnl::batch_normalization_backward::primitive_desc(desc, m.attr(), m.engine, fwd.pd);
    });
    if (m.zero_shift.size() < static_cast<size_t>(d.c)) m.zero_shift.assign(static_cast<size_t>(d.c), 0.0f);
    const memory::desc ch = bn_channel_md(d);
    Args args{{DNNL_ARG_SRC, memory(md, m.engine, const_cast<float*>(src))},
              {DNNL_ARG_DIFF_DST, m.fetch(diff_dst, f32_plain(bn_dims(d)), p.pd.diff_dst_desc(), key + "/diff_dst")},
              {DNNL_ARG_SCALE, memory(ch, m.engine, const_cast<float*>(scale))},
              {DNNL_ARG_SHIFT, memory(ch, m.engine, m.zero_shift.data())},
              {DNNL_ARG_MEAN, memory(ch, m.engine, const_cast<float*>(mean))},
              {DNNL_ARG_VARIANCE, memory(ch, m.engine, const_cast<float*>(variance))},
              {DNNL_ARG_DIFF_SCALE, memory(ch, m.engine, diff_scale)},
              {DNNL_ARG_DIFF_SHIFT, memory(ch, m.engine, diff_shift)}};
    auto out = m.output(diff_src, p.pd.diff_src_desc(), key + "/diff_src");
    args.emplace(DNNL_ARG_DIFF_SRC, out.mem);
    m.run(p.prim, p.pd.scratchpad_desc(), std::move(args));
    m.finish(out);
  });
}

// ---- activations ----------------------------------------------------------------------------
// Element-wise ops run in the layout of their input.
void CpuBackend::eltwise_forward(const EltwiseDesc& d, const float* src, float* dst) {
  guarded(__FILE__, __LINE__, "eltwise_forward " + d.str(), [&] {
    Impl& m = *impl_;
    const memory::desc md = m.layout_of(src, f32_plain({d.n}));
    auto& p = m.eltwise_forward_plan(d, md);
    auto out = m.output(dst, p.pd.dst_desc(), m.prefix() + d.str() + "/dst");
    m.run(p.prim, p.pd.scratchpad_desc(),
          {{DNNL_ARG_SRC, memory(md, m.engine, const_cast<float*>(src))}, {DNNL_ARG_DST, out.mem}});
    m.finish(out);
  });
}

void CpuBackend::eltwise_backward(const EltwiseDesc& d, const float* src, const float* dst,
                                  const float* diff_dst, float* diff_src) {
  guarded(__FILE__, __LINE__, "eltwise_backward " + d.str(), [&] {
    Impl& m = *impl_;
    // relu differentiates from src; logistic_use_dst_for_bwd from dst.
    const bool use_dst = d.kind == EltwiseKind::sigmoid;
    const float* data = use_dst ? dst : src;
    const memory::desc md = m.layout_of(data, f32_plain({d.n}));
    auto& fwd = m.eltwise_forward_plan(d, md);
    const std::string key = m.prefix() + d.str() + "/bwd/" + md_key(md);
    auto& p = m.plan(m.eltwise_bwd, key, [&] {
      dnnl::eltwise_backward::desc desc(eltwise_algorithm(d), md, md, eltwise_alpha(d),
                                        eltwise_beta(d));
      return dnnl::eltwise_backward::primitive_desc(desc, m.attr(), m.engine, fwd.pd);
    });
    Args args{{use_dst ? DNNL_ARG_DST : DNNL_ARG_SRC, memory(md, m.engine, const_cast<float*>(data))},
              {DNNL_ARG_DIFF_DST, m.fetch(diff_dst, f32_plain({d.n}), p.pd.diff_dst_desc(), key + "/diff_dst")}};
    auto out = m.output(diff_src, p.pd.diff_src_desc(), key + "/diff_src");
    args.emplace(DNNL_ARG_DIFF_SRC, out.mem);
    m.run(p.prim, p.pd.scratchpad_desc(), std::move(args));
    m.finish(out);
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
  make_plain(const_cast<float*>(logits), mb * classes);
  const std::string key = "softmax:mb" + std::to_string(mb) + "_c" + std::to_string(classes);
  guarded(__FILE__, __LINE__, "softmax_xent_forward " + key, [&] {
    Impl& m = *impl_;
    const memory::desc md = f32_plain({mb, classes});
    auto& p = m.plan(m.softmax_fwd, key, [&] {
      dnnl::softmax_forward::desc desc(dnnl::prop_kind::forward_training, md, 1);
      return dnnl::softmax_forward::primitive_desc(desc, m.attr(), m.engine);
    });
    m.run(p.prim, p.pd.scratchpad_desc(),
          {{DNNL_ARG_SRC, memory(md, m.engine, const_cast<float*>(logits))},
           {DNNL_ARG_DST, memory(md, m.engine, probs)}});
    m.wrote(probs);
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
  make_plain(const_cast<float*>(probs), mb * classes);
  const float inv_mb = 1.0f / static_cast<float>(mb);
#pragma omp parallel for
  for (int64_t n = 0; n < mb; ++n)
    for (int64_t k = 0; k < classes; ++k)
      diff_logits[n * classes + k] =
          (probs[n * classes + k] - (k == labels[n] ? 1.0f : 0.0f)) * inv_mb;
  mark_plain(diff_logits);
}

float CpuBackend::mse_forward(int64_t n, const float* pred, const float* target) {
  make_plain(const_cast<float*>(pred), n);
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
  make_plain(const_cast<float*>(pred), n);
  const float k = 2.0f / static_cast<float>(n);
#pragma omp parallel for
  for (int64_t i = 0; i < n; ++i) diff_pred[i] = k * (pred[i] - target[i]);
  mark_plain(diff_pred);
}

// ---- tensor plumbing ------------------------------------------------------------------------
void CpuBackend::add(int64_t n, const float* a, const float* b, float* dst) {
  guarded(__FILE__, __LINE__, "add:n" + std::to_string(n),
          [&] { impl_->binary_add(n, a, b, dst, false); });
}

void CpuBackend::add_relu(int64_t n, const float* a, const float* b, float* dst) {
  guarded(__FILE__, __LINE__, "add_relu:n" + std::to_string(n),
          [&] { impl_->binary_add(n, a, b, dst, true); });
}

void CpuBackend::copy(int64_t n, const float* src, float* dst) {
  // dst = src; a registered dst with room takes src's layout byte for byte.
  guarded(__FILE__, __LINE__, "copy:n" + std::to_string(n), [&] {
    Impl& m = *impl_;
    auto it = m.layouts.find(src);
    if (it == m.layouts.end()) {
      if (src != dst) std::memmove(dst, src, static_cast<size_t>(n) * sizeof(float));
      m.wrote(dst);
      return;
    }
    const memory::desc md = it->second;
    if (src == dst) return;
    auto cap = m.capacity.find(dst);
    if (cap != m.capacity.end() && cap->second >= md.get_size()) {
      std::memcpy(dst, src, md.get_size());
      m.wrote(dst);
      m.layouts[dst] = md;
    } else {
      m.reorder(md, src, f32_plain(md.dims()), dst, false);
      m.wrote(dst);
    }
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
  // srcs[i] (mb,channels[i],hw) -> dst (mb,sum channels,hw), plain fp32
  TS_CHECK(!channels.empty() && channels.size() == srcs.size(),
           "concat_forward: channels and srcs must be non-empty and of equal length");
  for (size_t i = 0; i < srcs.size(); ++i)
    make_plain(const_cast<float*>(srcs[i]), mb * channels[i] * hw);
  const std::string key = concat_key(mb, hw, channels);
  guarded(__FILE__, __LINE__, key, [&] {
    Impl& m = *impl_;
    std::vector<memory::desc> src_mds;
    int64_t total = 0;
    for (int64_t c : channels) {
      src_mds.push_back(f32_plain({mb, c, hw}));
      total += c;
    }
    const memory::desc dst_md = f32_plain({mb, total, hw});
    auto it = m.concat.find(key);
    if (it == m.concat.end()) {
      dnnl::concat::primitive_desc pd(dst_md, 1, src_mds, m.engine, m.attr());
      if (pd.scratchpad_desc().get_size() > m.scratchpad.size())
        m.scratchpad.resize(pd.scratchpad_desc().get_size());
      it = m.concat.emplace(key, Plan<dnnl::concat>{pd, dnnl::concat(pd), {}}).first;
    }
    Args args{{DNNL_ARG_DST, memory(dst_md, m.engine, dst)}};
    for (size_t i = 0; i < srcs.size(); ++i)
      args.emplace(DNNL_ARG_MULTIPLE_SRC + int(i), memory(src_mds[i], m.engine, const_cast<float*>(srcs[i])));
    m.run(it->second.prim, it->second.pd.scratchpad_desc(), std::move(args));
    m.wrote(dst);
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
  make_plain(const_cast<float*>(diff_dst), mb * total * hw);
  const int64_t parts = static_cast<int64_t>(channels.size());
#pragma omp parallel for collapse(2)
  for (int64_t n = 0; n < mb; ++n)
    for (int64_t i = 0; i < parts; ++i)
      std::memcpy(diff_srcs[i] + n * channels[i] * hw, diff_dst + (n * total + offset[i]) * hw,
                  sizeof(float) * static_cast<size_t>(channels[i] * hw));
  for (float* p : diff_srcs) mark_plain(p);
}

void CpuBackend::dropout_apply(int64_t n, const uint8_t* mask, float scale, const float* src,
                               float* dst) {
  make_plain(const_cast<float*>(src), n);
#pragma omp parallel for
  for (int64_t i = 0; i < n; ++i) dst[i] = mask[i] ? src[i] * scale : 0.0f;
  mark_plain(dst);
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
