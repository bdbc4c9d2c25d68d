// backend/cpu internals: what every planned oneDNN op of one CpuBackend shares (engine, stream,
// the layouts interned as LayoutIds, a primitive cache, the user scratchpad, reorder counts),
// and the ports through which an op meets its tensors. Only backend/cpu includes this.
//
// Ports are planned once: an InPort knows the desc of the tensor it will be given and the desc
// its primitive wants, and holds a reorder plus a temporary when they differ (nothing when they
// agree). An OutPort does the same for an output: the primitive writes straight into the
// caller's tensor when its desc is what the primitive produces, else into a temporary that is
// reordered into the tensor. Weights (plain f32 in the net's arena) come in through InPorts
// too; they change every step, so their reorder runs at every call.
#pragma once

#include <any>
#include <cstdint>
#include <memory>
#include <string>
#include <unordered_map>
#include <vector>
#include <oneapi/dnnl/dnnl.hpp>

#include "backend/backend.h"
#include "core/buffer.h"
#include "core/error.h"

namespace ts::cpu {

using dnnl::memory;
using tag = dnnl::memory::format_tag;
using dt = dnnl::memory::data_type;
using Args = std::unordered_map<int, memory>;

// Runs f and turns a dnnl::error into a RuntimeError naming the op (`what` and `detail`, e.g.
// "conv forward" and its descriptor), and where. The message is built only on failure, so the
// executing ops pay nothing for it.
template <typename F>
void guarded(const char* file, int line, const char* what, const std::string& detail, F&& f) {
  try {
    f();
  } catch (const dnnl::error& e) {
    throw RuntimeError(source_location_string(file, line) + ": oneDNN call failed in " + what + " " + detail +
                       ": " + e.what() + " (dnnl_status_t " + std::to_string(int(e.status)) + ")");
  }
}
template <typename F>
void guarded(const char* file, int line, const std::string& what, F&& f) {
  guarded(file, line, what.c_str(), std::string(), std::forward<F>(f));
}
// Plans an op, Impl(args...), under guarded(): a oneDNN error names `what` ("planning conv
// <descriptor> on <src>").
template <typename Impl, typename... A>
std::unique_ptr<Impl> guarded_plan(const char* file, int line, const std::string& what, A&&... args) {
  std::unique_ptr<Impl> op;
  guarded(file, line, what, [&] { op = std::make_unique<Impl>(std::forward<A>(args)...); });
  return op;
}

// The plain (row-major) layout of dims in data type t.
memory::desc plain_md(const memory::dims& dims, dt t);
inline memory::desc f32_plain(const memory::dims& dims) { return plain_md(dims, dt::f32); }
inline memory::desc any_md(const memory::dims& dims, dt t) { return memory::desc(dims, t, tag::any); }
bool is_plain(const memory::desc& md);
memory::dims dims_of(const Shape& s);
Shape shape_of(const memory::dims& d);
// A short text that identifies a layout (dims, data type, strides, blocks), for cache keys.
std::string md_key(const memory::desc& md);
// The same bytes seen with other dims: a plain tensor reshaped, or (for a blocked one) its
// plain form's reshape; used where an op reads (mb,c,h,w) as (mb,c*h*w).
memory::desc reshaped(const memory::desc& md, const memory::dims& dims);

template <typename Prim>
struct Cached {
  typename Prim::primitive_desc pd;
  Prim prim;
};

struct CpuContext {
  dnnl::engine engine{dnnl::engine::kind::cpu, 0};
  dnnl::stream stream{engine};
  Precision precision = Precision::fp32;
  // Interned layouts: id i > 0 is layouts[i]; kPlainLayout is "row-major in the tensor's type".
  std::vector<memory::desc> layouts{memory::desc()};
  std::unordered_map<std::string, std::any> primitives;  // key -> Cached<Prim>
  std::unordered_map<std::string, dnnl::reorder> reorders;
  Buffer<char> scratchpad;  // shared by every primitive (user mode); grows at plan time only
  int64_t activation_reorders = 0, weight_reorders = 0;

  dt act_dt() const { return precision == Precision::bf16 ? dt::bf16 : dt::f32; }
  std::string prefix() const { return precision == Precision::bf16 ? "bf16/" : "f32/"; }
  dnnl::primitive_attr attr(bool relu = false) const;

  // TensorDesc <-> memory::desc. A plain desc maps to the row-major md of its dims and type.
  TensorDesc tensor_desc(const memory::desc& md);
  memory::desc md(const TensorDesc& t) const;

  // Creates (once per key, then from the cache) a primitive and its descriptor; grows the
  // scratchpad to what it needs.
  template <typename Prim, typename MakePd>
  Cached<Prim> primitive(const std::string& key, MakePd&& make_pd) {
    auto it = primitives.find(key);
    if (it == primitives.end()) {
      typename Prim::primitive_desc pd = make_pd();
      const size_t need = pd.scratchpad_desc().get_size();
      if (need > scratchpad.size()) scratchpad.resize(need);
      it = primitives.emplace(key, Cached<Prim>{pd, Prim(pd)}).first;
    }
    return std::any_cast<Cached<Prim>>(it->second);
  }
  dnnl::reorder reorder_primitive(const memory::desc& from, const memory::desc& to);

  // Executes a primitive with the shared scratchpad and waits for it.
  void run(const dnnl::primitive& prim, const memory::desc& scratchpad_md, Args args);
  // One reorder execution between two memories (counted as an activation or weight reorder).
  void run_reorder(const dnnl::reorder& r, const memory& from, const memory& to, bool weights);
  // A memory over caller data (oneDNN wants a non-const handle; it does not write inputs).
  memory wrap(const memory::desc& md, const void* data) { return memory(md, engine, const_cast<void*>(data)); }
};

// An op input (see the file comment). `weights`: counted as a weight reorder.
class InPort {
 public:
  void plan(CpuContext& ctx, const memory::desc& given, const memory::desc& want, bool weights = false);
  // A memory in the wanted desc holding `data`'s tensor (converted now if needed); `generation`
  // tags the conversion (an op counts its forwards).
  memory get(CpuContext& ctx, const void* data, uint64_t generation = 0);
  // As get, but reuses `other`'s conversion when `other` converted the same data, given and
  // wanted in the same descs, in the same generation: a forward's src or weights read again by
  // the backward of that forward, a diff_dst read by both backward primitives of one call. The
  // ops' contract (backend/ops.h) is that those tensors do not change in between.
  memory get_shared(CpuContext& ctx, const void* data, const InPort& other, uint64_t generation);

 private:
  memory::desc given_, want_, staged_;  // staged_: what the reorder writes (want_, or its plain form in given_'s dims)
  bool convert_ = false, weights_ = false;
  dnnl::reorder reorder_;
  Buffer<char> temp_;
  const void* last_data_ = nullptr;  // what temp_ holds a conversion of
  uint64_t last_generation_ = 0;     // and when it was converted
};

// An op output (see the file comment).
class OutPort {
 public:
  void plan(CpuContext& ctx, const memory::desc& produced, const memory::desc& given, bool weights = false);
  // The memory the primitive writes into for `data`.
  memory target(CpuContext& ctx, void* data);
  // Moves the result into `data` when it went through the temporary.
  void finish(CpuContext& ctx, void* data);

 private:
  memory::desc produced_, given_, staged_;  // staged_: produced_ seen with given_'s dims
  bool convert_ = false, weights_ = false;
  dnnl::reorder reorder_;
  Buffer<char> temp_;
};

}  // namespace ts::cpu
