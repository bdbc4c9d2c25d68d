// String helpers used across modules (joining lists for messages).
#pragma once

#include <string>
#include <vector>

namespace ts {

// "a, b, c" for join({"a","b","c"}, ", ").
inline std::string join(const std::vector<std::string>& items, const std::string& separator = ", ") {
  std::string out;
  for (size_t i = 0; i < items.size(); ++i) out += (i ? separator : "") + items[i];
  return out;
}

}  // namespace ts
