// Tensors as backends see them: a view of device memory plus a descriptor (logical dims, data
// type, layout). Layouts are decided when a backend plans an op (Backend::plan_*), never looked
// up by address while the timed loop runs: the descriptor travels with the tensor.
//
// A layout id is either kPlainLayout (row-major over the logical dims, e.g. NCHW; the only
// layout the host and every backend understand), kAnyLayout (in a plan request: "the backend
// chooses this output's layout") or an opaque id that one backend object interned for one of
// its own layouts (oneDNN's blocked nChw16c, ...); such ids mean nothing to other backends.
#pragma once

#include <cstddef>
#include <cstdint>
#include <string>

#include "core/shape.h"

namespace ts {

enum class DType : uint8_t { f32, bf16, f16, i32, u8 };
const char* dtype_name(DType dtype);
size_t dtype_bytes(DType dtype);

using LayoutId = int32_t;
constexpr LayoutId kPlainLayout = 0;
constexpr LayoutId kAnyLayout = -1;

struct TensorDesc {
  Shape dims;                  // logical dims, e.g. (mb, c, h, w)
  DType dtype = DType::f32;
  LayoutId layout = kPlainLayout;
  size_t bytes = 0;            // storage in this layout (>= numel x dtype size; padded layouts more)

  // Row-major storage of `dims` in `dtype`.
  static TensorDesc plain(Shape dims, DType dtype = DType::f32);
  // A plan request for an output whose layout (and, for mixed precision, data type) the backend
  // chooses; bytes stay 0 until a plan fills them in.
  static TensorDesc any(Shape dims, DType dtype = DType::f32);
  bool is_plain() const { return layout == kPlainLayout; }
  bool is_any() const { return layout == kAnyLayout; }
  int64_t numel() const { return dims.numel(); }
  // "(128,32,14,14):bf16:L3" or "(128,10):f32:plain", for messages and test names.
  std::string str() const;
  bool operator==(const TensorDesc& o) const {
    return dims == o.dims && dtype == o.dtype && layout == o.layout && bytes == o.bytes;
  }
  bool operator!=(const TensorDesc& o) const { return !(*this == o); }
};

// A view: memory owned elsewhere (a DeviceBuffer, an arena), described by `desc`.
struct Tensor {
  void* data = nullptr;
  TensorDesc desc;

  Tensor() = default;
  Tensor(void* d, TensorDesc t) : data(d), desc(std::move(t)) {}
  float* f32() const { return static_cast<float*>(data); }
  explicit operator bool() const { return data != nullptr; }
};

}  // namespace ts
