// Input staging: host-to-device copies on a second queue that overlap compute (cuda: a copy
// stream ordered by events). A backend that computes in host memory has none: its callers copy
// at once (Backend::copy_from_host). Asked for once (capability<InputStaging>, backend.h).
#pragma once

#include <cstddef>

namespace ts {

class InputStaging {
 public:
  virtual ~InputStaging() = default;
  // Starts copying host_src (allocate_host memory, which must stay untouched until
  // staged_copies_done) to device_dst and returns at once.
  virtual void stage_from_host(void* device_dst, const void* host_src, size_t bytes) = 0;
  // Makes the compute queue wait (the host does not) for every staged copy before the ops
  // queued next.
  virtual void wait_for_staged() = 0;
  // Blocks the host until the staged copies finished (then their host memory may be reused).
  virtual void staged_copies_done() = 0;
  // The work queued so far is the last to read memory staged into before: a later
  // stage_from_host waits for that work on the device (the host does not) before it overwrites.
  virtual void release_staged() = 0;
};

}  // namespace ts
