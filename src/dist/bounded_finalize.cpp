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

// Ends the process unless disarmed (destroyed) within the deadline.
class Deadline {
 public:
  Deadline(int seconds, int exit_code, const char* what, const char* why)
      : thread_([=, this] { watch(seconds, exit_code, what, why); }) {}
  ~Deadline() {
    {
      std::lock_guard<std::mutex> lock(mutex_);
      done_ = true;
    }
    wake_.notify_one();
    thread_.join();
  }
  Deadline(const Deadline&) = delete;
  Deadline& operator=(const Deadline&) = delete;

 private:
  void watch(int seconds, int exit_code, const char* what, const char* why) {
    std::unique_lock<std::mutex> lock(mutex_);
    if (wake_.wait_for(lock, std::chrono::seconds(seconds), [this] { return done_; })) return;
    std::fprintf(stderr, "trainscale: %s did not return within %d s (%s); exiting with code %d\n", what, seconds, why,
                 exit_code);
    std::fflush(stderr);
    _exit(exit_code);
  }

  std::mutex mutex_;
  std::condition_variable wake_;
  bool done_ = false;
  std::thread thread_;  // last: started once the members above exist
};

}  // namespace

void run_with_deadline(int seconds, int exit_code, const char* what, const char* why,
                       const std::function<void()>& body) {
  Deadline deadline(seconds, exit_code, what, why);
  body();
}

void finalize_mpi_bounded(int exit_code) {
  run_with_deadline(kFinalizeDeadlineSeconds, exit_code, "MPI_Finalize",
                    "the MPI library's closing waits for a peer that already left; results were written before it",
                    [] {
                      int size = 1;
                      MPI_Comm_size(MPI_COMM_WORLD, &size);
                      if (size > 1) MPI_Barrier(MPI_COMM_WORLD);
                      MPI_Finalize();
                    });
}

}  // namespace ts
