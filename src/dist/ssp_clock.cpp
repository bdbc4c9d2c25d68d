// Stale-synchronous-parallel bookkeeping (see ssp_clock.h).
#include "dist/ssp_clock.h"

#include <algorithm>
#include <limits>
#include <string>

#include "core/error.h"

namespace ts {

SspClock::SspClock(int workers, int64_t staleness)
    : staleness_(staleness),
      clock_(static_cast<size_t>(workers), 0),
      sent_round_(static_cast<size_t>(workers), 0),
      awaiting_(static_cast<size_t>(workers), 0),
      final_(static_cast<size_t>(workers), 0),
      left_(static_cast<size_t>(workers), 0) {
  TS_CHECK(workers >= 1 && staleness >= 0, "SspClock: needs >= 1 worker and staleness >= 0");
}

void SspClock::start_at(int64_t steps) {
  TS_CHECK(steps >= 0, "SspClock: a negative step count");
  std::fill(clock_.begin(), clock_.end(), steps);
  std::fill(sent_round_.begin(), sent_round_.end(), steps);
  std::fill(awaiting_.begin(), awaiting_.end(), 0);
}

int64_t SspClock::newest() const { return *std::max_element(clock_.begin(), clock_.end()); }

int64_t SspClock::round() const {
  int64_t r = std::numeric_limits<int64_t>::max();
  for (size_t w = 0; w < clock_.size(); ++w)
    if (!left_[w]) r = std::min(r, clock_[w]);
  return r;
}

bool SspClock::all_left() const {
  return std::all_of(left_.begin(), left_.end(), [](char l) { return l != 0; });
}

int64_t SspClock::on_push(int worker, bool final) {
  const size_t w = static_cast<size_t>(worker);
  TS_CHECK(worker >= 0 && w < clock_.size(), "SspClock: no worker " + std::to_string(worker));
  TS_CHECK(!awaiting_[w] && !left_[w], "SspClock: worker " + std::to_string(worker) +
                                           " pushed again before its reply, or after it left");
  const int64_t stale = clock_[w] - sent_round_[w];  // its steps then, less the round its weights held
  ++clock_[w];
  awaiting_[w] = 1;
  final_[w] = final ? 1 : 0;
  return stale;
}

void SspClock::on_leave(int worker) {
  const size_t w = static_cast<size_t>(worker);
  TS_CHECK(worker >= 0 && w < clock_.size(), "SspClock: no worker " + std::to_string(worker));
  left_[w] = 1;
  awaiting_[w] = 0;
}

std::vector<int> SspClock::take_ready() {
  std::vector<int> ready;
  const int64_t r = round();
  for (size_t w = 0; w < clock_.size(); ++w) {
    if (!awaiting_[w]) continue;
    const int64_t needed = final_[w] ? clock_[w] : clock_[w] - staleness_;
    if (r < needed) continue;
    awaiting_[w] = 0;
    sent_round_[w] = r;
    ready.push_back(static_cast<int>(w));
  }
  return ready;
}

}  // namespace ts
