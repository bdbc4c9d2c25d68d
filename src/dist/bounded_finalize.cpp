// See bounded_finalize.h.
#include "dist/bounded_finalize.h"

#include <unistd.h>

#include <chrono>
#include <condition_variable>
#include <cstdio>
#include <mutex>
#include <thread>

#include <mpi.h>

namespace ts {
namespace {

// Runs `exit_code`'s _exit on its own thread unless disarmed within the deadline.
class FinalizeDeadline {
 public:
  explicit FinalizeDeadline(int exit_code) : thread_([this, exit_code] { watch(exit_code); }) {}
  ~FinalizeDeadline() {
    {
      std::lock_guard<std::mutex> lock(mutex_);
      done_ = true;
    }
    wake_.notify_one();
    thread_.join();
  }
  FinalizeDeadline(const FinalizeDeadline&) = delete;
  FinalizeDeadline& operator=(const FinalizeDeadline&) = delete;

 private:
  void watch(int exit_code) {
    std::unique_lock<std::mutex> lock(mutex_);
    if (wake_.wait_for(lock, std::chrono::seconds(kFinalizeDeadlineSeconds), [this] { return done_; })) return;
    std::fprintf(stderr,
                 "trainscale: MPI_Finalize did not return within %d s (the MPI library's closing waits for a "
                 "peer that already left; results were written before it); exiting with code %d\n",
                 kFinalizeDeadlineSeconds, exit_code);
    std::fflush(stderr);
    _exit(exit_code);
  }

  std::mutex mutex_;
  std::condition_variable wake_;
  bool done_ = false;
  std::thread thread_;  // last: started once the members above exist
};

}  // namespace

void finalize_mpi_bounded(int exit_code) {
  FinalizeDeadline deadline(exit_code);
  int size = 1;
  MPI_Comm_size(MPI_COMM_WORLD, &size);
  if (size > 1) MPI_Barrier(MPI_COMM_WORLD);
  MPI_Finalize();
}

}  // namespace ts
