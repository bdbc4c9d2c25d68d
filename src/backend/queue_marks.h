// Results the host reads later: device-to-host copies queued behind compute, and marks, points in
// the backend's queue that the host waits for (cuda: a ring of events, cuda_marks.h). A backend
// that computes in host memory executes each call at once and has none: its callers copy at once
// (Backend::copy_to_host) and have nothing to wait for. Asked for once (capability<QueueMarks>).
#pragma once

#include <cstddef>
#include <cstdint>

namespace ts {

class QueueMarks {
 public:
  virtual ~QueueMarks() = default;
  // Queues a copy of device_src to host_dst (allocate_host memory) after the ops queued so far
  // and returns at once. The host reads what it wrote once it has waited for a mark recorded
  // after it.
  virtual void queue_copy_to_host(void* host_dst, const void* device_src, size_t bytes) = 0;
  // Records the point after the work queued so far and returns its number (increasing; 0 is
  // passed from the start).
  virtual int64_t mark() = 0;
  // Blocks the host until the device has passed point `mark`, not until the queue is empty: work
  // queued after it (the step's backward, after its loss) keeps the device busy meanwhile. Any
  // thread may wait.
  virtual void wait_for_mark(int64_t mark) = 0;
};

}  // namespace ts
