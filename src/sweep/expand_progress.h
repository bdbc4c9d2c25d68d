// Progress lines of a long `sweep expand` (docs/sweeps.md "Expansion"): a 10^6-point sweep
// resolves every run config (a few milliseconds each) and said nothing for minutes. A line goes
// to the stream at most every `every_seconds` (0: after every item), never for a phase that
// ends before the first is due.
#pragma once

#include <cstdint>
#include <ostream>

namespace ts {

class ExpansionProgress {
 public:
  // `out` nullptr: silent.
  ExpansionProgress(std::ostream* out, double every_seconds);
  // `done` of `total` items of a phase: "sweep expand: expanded 120000 of 1000000 points (12%),
  // 41 s so far" when a line is due.
  void report(const char* what, int64_t done, int64_t total, const char* items);

 private:
  std::ostream* out_;
  double every_seconds_;
  double start_, last_;
};

}  // namespace ts
