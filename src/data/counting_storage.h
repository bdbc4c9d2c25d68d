// Counting reads: a Storage wrapper that adds the bytes and the seconds of every read_at of its
// files to counters of the calling thread. The loader reads a batch in one worker thread, so the
// difference of that thread's counters around the fill is the batch's I/O (the run file's
// /io/read_bytes and /io/read_seconds per step and rank); no format knows about it.
#pragma once

#include <cstdint>
#include <memory>

#include "data/storage.h"

namespace ts {

// Reads this thread made through counting storages so far (monotonic; per thread, so no
// locking and no atomics in the read path).
struct ReadCounts {
  int64_t bytes = 0;
  double seconds = 0;  // wall time inside read_at
};
ReadCounts thread_read_counts();

// `inner` with counted reads; name(), exists() and list() are inner's.
std::unique_ptr<Storage> make_counting_storage(std::unique_ptr<Storage> inner);

}  // namespace ts
