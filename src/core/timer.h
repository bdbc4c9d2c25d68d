// Clocks: monotonic seconds for step and phase timing, and the UTC time of day that run files,
// markers and logs record.
#pragma once

#include <chrono>
#include <string>

namespace ts {

// Monotonic seconds: the steady wall clock (core/clock.cpp). trainscale-sim links its own
// definition (sim/simulated_clock.cpp: the simulated time), so that the timings dist/ takes
// inside a simulation are simulated seconds; core/clock.cpp defines nothing else, so the
// linker never takes it from the archive there.
double now_seconds();

// Wall-clock seconds since 1970-01-01 UTC (system clock, fractional): when things happened, for
// the run file's wall times and the MLPerf log's time_ms. Never for durations (now_seconds).
double unix_seconds();

// The current UTC time as ISO 8601, "2026-11-21T18:31:02Z".
std::string utc_timestamp();

}  // namespace ts
