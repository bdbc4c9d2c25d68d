// Ports converting data types at the edges of the CUDA ops (cuda_dtype_port.h).
#include "backend/cuda/cuda_dtype_port.h"

#include <utility>

#include "backend/cuda/cuda_check.h"
#include "backend/cuda/cuda_kernels.h"
#include "backend/cuda/cuda_layout.h"
#include "core/error.h"

namespace ts::cuda {

// ---- ports ----------------------------------------------------------------------------------
namespace {
TensorDesc flat(DType t, int64_t numel) { return TensorDesc::plain(Shape{numel}, t); }
size_t storage_bytes(const TensorDesc& d) { return static_cast<size_t>(d.numel()) * dtype_bytes(d.dtype); }
// Plain tensors of equal numel but other dims ((mb,c) vs (mb,c,1,1)) hold the same bytes.
bool differ(const TensorDesc& a, const TensorDesc& b) { return a.dtype != b.dtype || is_nhwc(a) != is_nhwc(b); }
// A transpose needs the logical dims on both sides; a type conversion only the count.
void check_convertible(const TensorDesc& from, const TensorDesc& to, const std::string& what) {
  const bool transposes = is_nhwc(from) != is_nhwc(to);
  if (from.numel() != to.numel() || (transposes && from.dims != to.dims))
    throw ConfigError("cuda backend: " + what + ": cannot convert " + from.str() + " to " + to.str() +
                      (transposes ? " (a layout change needs equal dims)" : " (different sizes)"));
}
}  // namespace

bool InPort::converts() const { return differ(from_, compute_); }
bool OutPort::converts() const { return differ(compute_, to_); }

InPort::InPort(DType from, DType compute, int64_t numel, const std::string& what)
    : InPort(flat(from, numel), flat(compute, numel), what) {}

InPort::InPort(const TensorDesc& from, const TensorDesc& compute, const std::string& what)
    : from_(from), compute_(compute) {
  from_.bytes = compute_.bytes = 0;  // compared by dims, type and layout
  check_convertible(from_, compute_, what);
  if (converts()) buffer_ = DeviceMemory(storage_bytes(compute_), what);
}

const void* InPort::get(const void* data, cudaStream_t stream) {
  if (!converts()) return data;
  convert_tensor(data, from_, buffer_.get(), compute_, stream);
  converted_ = data;
  return buffer_.get();
}

const void* InPort::get_reused(const void* data, cudaStream_t stream) {
  if (converts() && converted_ == data) return buffer_.get();
  return get(data, stream);
}

OutPort::OutPort(DType compute, DType to, int64_t numel, const std::string& what)
    : OutPort(flat(compute, numel), flat(to, numel), what) {}

OutPort::OutPort(const TensorDesc& compute, const TensorDesc& to, const std::string& what)
    : compute_(compute), to_(to) {
  compute_.bytes = to_.bytes = 0;
  check_convertible(compute_, to_, what);
  if (converts()) buffer_ = DeviceMemory(storage_bytes(compute_), what);
}

void OutPort::finish(void* data, cudaStream_t stream) {
  if (converts()) convert_tensor(buffer_.get(), compute_, data, to_, stream);
}

// ---- descs ----------------------------------------------------------------------------------
static bool is_float_dtype(DType t) { return t == DType::f32 || t == DType::f16 || t == DType::bf16; }

void check_activation_desc(const TensorDesc& desc, const std::string& what) {
  if (!is_cuda_layout(desc))
    throw ConfigError("cuda backend: " + what + ": tensor " + desc.str() +
                      " is in a layout the CUDA ops do not read; accepted: plain (row-major NCHW) or the CUDA "
                      "backend's NHWC (L" + std::to_string(kNhwcLayout) + ", 4-D only)");
  if (!is_float_dtype(desc.dtype))
    throw ConfigError("cuda backend: " + what + ": tensor " + desc.str() + " has data type " +
                      dtype_name(desc.dtype) + "; accepted: f32, f16, bf16");
}

TensorDesc output_desc(const TensorDesc& requested, const Shape& dims, DType act_dtype, const std::string& what,
                       LayoutId layout) {
  if (requested.is_any()) return layout_desc(dims, act_dtype, layout);
  check_activation_desc(requested, what + " output");
  if (requested.dims.numel() != dims.numel() || (is_nhwc(requested) && requested.dims != dims))
    throw ConfigError("cuda backend: " + what + ": output requested as " + requested.str() + " but the op writes " +
                      dims.str());
  return requested;
}

}  // namespace ts::cuda
