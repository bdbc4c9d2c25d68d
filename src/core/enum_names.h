// Enum <-> name tables: one {value, name} row per value, so that a value's name and the list
// of values come from one place.
#pragma once

#include <cstddef>
#include <utility>
#include <vector>

namespace ts {

template <class E>
using EnumName = std::pair<E, const char*>;

// The name of `value` in `table`, `unknown` where the table lacks it.
template <class E, size_t N>
const char* name_in(const EnumName<E> (&table)[N], E value, const char* unknown = "?") {
  for (const auto& [v, name] : table)
    if (v == value) return name;
  return unknown;
}

// The values of `table`, in its order.
template <class E, size_t N>
std::vector<E> values_in(const EnumName<E> (&table)[N]) {
  std::vector<E> values;
  for (const auto& row : table) values.push_back(row.first);
  return values;
}

}  // namespace ts
