// Tensor shapes and the plain (non-owning) float tensor view used between modules.
// Activations are NCHW fp32 row-major unless a comment says otherwise.
#pragma once

#include <cstdint>
#include <initializer_list>
#include <string>
#include <vector>

namespace ts {

struct Shape {
  std::vector<int64_t> dims;

  Shape() = default;
  Shape(std::initializer_list<int64_t> d) : dims(d) {}
  explicit Shape(std::vector<int64_t> d) : dims(std::move(d)) {}

  int rank() const { return static_cast<int>(dims.size()); }
  int64_t operator[](int i) const { return dims[static_cast<size_t>(i)]; }
  int64_t& operator[](int i) { return dims[static_cast<size_t>(i)]; }
  // Product of all dims; 1 for rank 0.
  int64_t numel() const;
  // Product of dims after the first (per-sample size for (N, ...) shapes).
  int64_t per_sample() const;
  // "(2,3,28,28)"
  std::string str() const;
  bool operator==(const Shape& o) const { return dims == o.dims; }
  bool operator!=(const Shape& o) const { return dims != o.dims; }
};

}  // namespace ts
