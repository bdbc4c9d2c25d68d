// Clocks: monotonic wall-clock seconds for step and phase timing, and the UTC time of day
// that run files, markers and logs record.
#pragma once

#include <chrono>
#include <string>

namespace ts {

inline double now_seconds() {
  using clock = std::chrono::steady_clock;
  return std::chrono::duration<double>(clock::now().time_since_epoch()).count();
}

// The current UTC time as ISO 8601, "2026-11-21T18:31:02Z".
std::string utc_timestamp();

}  // namespace ts
