// Monotonic wall-clock seconds for step and phase timing.
#pragma once

#include <chrono>

namespace ts {

inline double now_seconds() {
  using clock = std::chrono::steady_clock;
  return std::chrono::duration<double>(clock::now().time_since_epoch()).count();
}

}  // namespace ts
