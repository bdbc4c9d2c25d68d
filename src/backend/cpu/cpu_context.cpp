// backend/cpu internals (see cpu_context.h): memory descs, the layout table, ports.
#include "backend/cpu/cpu_context.h"

namespace ts::cpu {

memory::desc plain_md(const memory::dims& dims, dt t) {
  static const tag by_rank[] = {tag::undef, tag::a, tag::ab, tag::abc, tag::abcd, tag::abcde};
  TS_CHECK(!dims.empty() && dims.size() <= 5, "cpu backend: unsupported tensor rank " + std::to_string(dims.size()));
  return memory::desc(dims, t, by_rank[dims.size()]);
}

bool is_plain(const memory::desc& md) { return md == plain_md(md.dims(), md.data_type()); }

memory::dims dims_of(const Shape& s) { return memory::dims(s.dims.begin(), s.dims.end()); }
Shape shape_of(const memory::dims& d) { return Shape(std::vector<int64_t>(d.begin(), d.end())); }

static dt dnnl_type(DType t) {
  switch (t) {
    case DType::f32: return dt::f32;
    case DType::bf16: return dt::bf16;
    case DType::f16: return dt::f16;
    case DType::i32: return dt::s32;
    case DType::u8: return dt::u8;
  }
  return dt::undef;
}

static DType dtype_of(dt t) {
  switch (t) {
    case dt::bf16: return DType::bf16;
    case dt::f16: return DType::f16;
    case dt::s32: return DType::i32;
    case dt::u8: return DType::u8;
    default: return DType::f32;
  }
}

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

memory::desc reshaped(const memory::desc& md, const memory::dims& dims) {
  if (md.dims() == dims) return md;
  TS_CHECK(is_plain(md), "cpu backend: reshaping a non-plain tensor " + md_key(md));
  return plain_md(dims, md.data_type());
}

dnnl::primitive_attr CpuContext::attr(bool relu) const {
  dnnl::primitive_attr a;
  a.set_scratchpad_mode(dnnl::scratchpad_mode::user);
  if (relu) {
    dnnl::post_ops ops;
    ops.append_eltwise(1.0f, dnnl::algorithm::eltwise_relu, 0.0f, 0.0f);
    a.set_post_ops(ops);
  }
  return a;
}

TensorDesc CpuContext::tensor_desc(const memory::desc& md) {
  TensorDesc t;
  t.dims = shape_of(md.dims());
  t.dtype = dtype_of(md.data_type());
  t.bytes = md.get_size();
  if (is_plain(md)) {
    t.layout = kPlainLayout;
    return t;
  }
  for (size_t i = 1; i < layouts.size(); ++i)
    if (layouts[i] == md) {
      t.layout = static_cast<LayoutId>(i);
      return t;
    }
  layouts.push_back(md);
  t.layout = static_cast<LayoutId>(layouts.size() - 1);
  return t;
}

memory::desc CpuContext::md(const TensorDesc& t) const {
  TS_CHECK(!t.is_any(), "cpu backend: a tensor of layout 'any' has no memory desc: " + t.str());
  if (t.is_plain()) return plain_md(dims_of(t.dims), dnnl_type(t.dtype));
  TS_CHECK(t.layout > 0 && static_cast<size_t>(t.layout) < layouts.size(),
           "cpu backend: layout id " + std::to_string(t.layout) + " was not planned by this backend (" + t.str() + ")");
  const memory::desc& m = layouts[static_cast<size_t>(t.layout)];
  TS_CHECK(shape_of(m.dims()) == t.dims, "cpu backend: tensor " + t.str() + " does not match its layout " + md_key(m));
  return m;
}

dnnl::reorder CpuContext::reorder_primitive(const memory::desc& from, const memory::desc& to) {
  const std::string key = md_key(from) + ">" + md_key(to);
  auto it = reorders.find(key);
  if (it == reorders.end())
    it = reorders.emplace(key, dnnl::reorder(dnnl::reorder::primitive_desc(engine, from, engine, to))).first;
  return it->second;
}

void CpuContext::run(const dnnl::primitive& prim, const memory::desc& scratchpad_md, Args args) {
  args.emplace(DNNL_ARG_SCRATCHPAD, memory(scratchpad_md, engine, scratchpad.data()));
  prim.execute(stream, args);
  stream.wait();
}

void CpuContext::run_reorder(const dnnl::reorder& r, const memory& from, const memory& to, bool weights) {
  memory src = from, dst = to;
  r.execute(stream, src, dst);
  stream.wait();
  (weights ? weight_reorders : activation_reorders)++;
}

// ---- ports ------------------------------------------------------------------------------------
// The form in which a tensor (`tensor`) meets a primitive that reads or writes it as `prim`:
// `prim` itself, or, where the primitive sees other dims ((mb,c,h,w) as (mb,c*h*w)) and so is
// plain, the plain form of the tensor's own dims in the primitive's type, whose bytes `prim`
// shares; it is reordered from or into the tensor where it differs from the tensor's form.
static memory::desc staged_form(const memory::desc& prim, const memory::desc& tensor, bool reading) {
  if (tensor.dims() == prim.dims()) return prim;
  TS_CHECK(is_plain(prim), "cpu backend: cannot " + (reading ? "read " + md_key(tensor) + " as " + md_key(prim)
                                                             : "write " + md_key(prim) + " as " + md_key(tensor)));
  return plain_md(tensor.dims(), prim.data_type());
}

void InPort::plan(CpuContext& ctx, const memory::desc& given, const memory::desc& want, bool weights) {
  given_ = given;
  want_ = want;
  weights_ = weights;
  last_data_ = nullptr;
  staged_ = staged_form(want, given, true);
  convert_ = given != staged_;
  if (!convert_) return;
  reorder_ = ctx.reorder_primitive(given, staged_);
  temp_.resize(staged_.get_size());
}

memory InPort::get(CpuContext& ctx, const void* data, uint64_t generation) {
  if (!convert_) return ctx.wrap(want_, data);
  ctx.run_reorder(reorder_, ctx.wrap(given_, data), memory(staged_, ctx.engine, temp_.data()), weights_);
  last_data_ = data;
  last_generation_ = generation;
  return memory(want_, ctx.engine, temp_.data());
}

memory InPort::get_shared(CpuContext& ctx, const void* data, const InPort& other, uint64_t generation) {
  if (convert_ && other.convert_ && other.last_data_ == data && other.last_generation_ == generation &&
      other.want_ == want_ && other.given_ == given_)
    return memory(want_, ctx.engine, const_cast<char*>(other.temp_.data()));
  return get(ctx, data, generation);
}

void OutPort::plan(CpuContext& ctx, const memory::desc& produced, const memory::desc& given, bool weights) {
  produced_ = produced;
  given_ = given;
  weights_ = weights;
  staged_ = staged_form(produced, given, false);
  convert_ = staged_ != given;
  if (!convert_) return;
  reorder_ = ctx.reorder_primitive(staged_, given);
  temp_.resize(staged_.get_size());
}

memory OutPort::target(CpuContext& ctx, void* data) {
  return convert_ ? memory(produced_, ctx.engine, temp_.data()) : ctx.wrap(produced_, data);
}

void OutPort::finish(CpuContext& ctx, void* data) {
  if (!convert_) return;
  ctx.run_reorder(reorder_, memory(staged_, ctx.engine, temp_.data()), ctx.wrap(given_, data), weights_);
}

}  // namespace ts::cpu
