#include "core/shape.h"

namespace ts {

int64_t Shape::numel() const {
  int64_t n = 1;
  for (auto d : dims) n *= d;
  return n;
}

int64_t Shape::per_sample() const {
  int64_t n = 1;
  for (size_t i = 1; i < dims.size(); ++i) n *= dims[i];
  return n;
}

std::string Shape::str() const {
  std::string s = "(";
  for (size_t i = 0; i < dims.size(); ++i) {
    if (i) s += ",";
    s += std::to_string(dims[i]);
  }
  return s + ")";
}

}  // namespace ts
