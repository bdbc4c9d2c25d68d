// The ring of events behind QueueMarks::mark (see cuda_marks.h).
#include "backend/cuda/cuda_marks.h"

#include <algorithm>

#include "backend/cuda/cuda_check.h"
#include "core/error.h"

namespace ts::cuda {

StreamMarks::StreamMarks() {
  for (cudaEvent_t& e : events_) TS_CUDA_CHECK(cudaEventCreateWithFlags(&e, cudaEventDisableTiming));
}

StreamMarks::~StreamMarks() {
  for (cudaEvent_t e : events_)
    if (e) cudaEventDestroy(e);
}

int64_t StreamMarks::record(cudaStream_t stream) {
  std::lock_guard<std::mutex> lock(mutex_);
  const int64_t m = latest_ + 1;
  TS_CUDA_CHECK(cudaEventRecord(events_[static_cast<size_t>(m % kEvents)], stream));
  latest_ = m;
  return m;
}

void StreamMarks::wait(int64_t m, int device) {
  cudaEvent_t event = nullptr;
  {
    std::lock_guard<std::mutex> lock(mutex_);
    TS_CHECK(m <= latest_, "StreamMarks::wait: mark " + std::to_string(m) + " was never recorded (the latest is " +
                               std::to_string(latest_) + ")");
    if (m <= 0) return;
    // Overwritten marks: the oldest kept one comes later in the stream. A record after this
    // unlock re-arms the event for a newer point, which is also later: still long enough.
    const int64_t kept = std::max(m, latest_ - kEvents + 1);
    event = events_[static_cast<size_t>(kept % kEvents)];
  }
  TS_CUDA_CHECK(cudaSetDevice(device));
  TS_CUDA_CHECK(cudaEventSynchronize(event));
}

}  // namespace ts::cuda
