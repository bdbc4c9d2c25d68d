// Points in a CUDA stream that the host waits for (QueueMarks::mark / wait_for_mark): a ring of
// events, mark m recorded into event m % kEvents. A mark older than the ring is waited for
// through the oldest event the ring still holds, which the stream passes later: the wait may be
// longer than needed, never shorter. Thread-safe: the trainer marks, an exchange's
// communication thread may wait.
#pragma once

#include <array>
#include <cstdint>
#include <mutex>

#include <cuda_runtime.h>

namespace ts::cuda {

class StreamMarks {
 public:
  StreamMarks();  // on the current device; throws RuntimeError when CUDA cannot create events
  ~StreamMarks();
  StreamMarks(const StreamMarks&) = delete;
  StreamMarks& operator=(const StreamMarks&) = delete;

  // Records the point after the work queued on `stream` so far; its number (1, 2, ...).
  int64_t record(cudaStream_t stream);
  // Blocks until the stream has passed mark `m` (0 and below: nothing to wait for).
  void wait(int64_t m, int device);

 private:
  static constexpr int64_t kEvents = 64;
  std::mutex mutex_;
  std::array<cudaEvent_t, kEvents> events_{};
  int64_t latest_ = 0;  // the newest mark recorded
};

}  // namespace ts::cuda
