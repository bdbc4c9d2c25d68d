// The communication thread (see comm_thread.h).
#include "dist/comm_thread.h"

#include <omp.h>

#include <condition_variable>
#include <exception>
#include <mutex>
#include <thread>
#include <utility>

#include "dist/communicator.h"

namespace ts {

struct CommThread::State {
  Job job;
  std::thread thread;
  std::mutex mutex;
  std::condition_variable work_cv, done_cv;
  int64_t posted = 0, done = 0;
  bool stop = false;
  bool failed = false;  // a job threw: the rest of the round is given up
  std::exception_ptr error;

  void loop() {
    omp_set_num_threads(1);
    for (;;) {
      int64_t i;
      {
        std::unique_lock<std::mutex> lock(mutex);
        work_cv.wait(lock, [&] { return stop || (!failed && posted > done); });
        if (stop) return;
        i = done;
      }
      std::exception_ptr failure;
      try {
        job(i);
      } catch (...) {
        failure = std::current_exception();
      }
      {
        std::lock_guard<std::mutex> lock(mutex);
        if (failure) {
          error = failure;
          failed = true;
        } else {
          ++done;
        }
      }
      done_cv.notify_one();
    }
  }
};

bool CommThread::can_call_mpi() { return mpi_threads_serialized(); }

CommThread::CommThread(Job job) : state_(std::make_shared<State>()) {
  state_->job = std::move(job);
  state_->thread = std::thread([keep = state_] { keep->loop(); });
}

CommThread::~CommThread() {
  bool busy;
  {
    std::lock_guard<std::mutex> lock(state_->mutex);
    state_->stop = true;
    busy = !state_->failed && state_->done < state_->posted;
  }
  if (busy) {
    state_->thread.detach();  // the lambda's copy of state_ keeps the state alive
    return;
  }
  state_->work_cv.notify_one();
  state_->thread.join();
}

void CommThread::reset() {
  std::lock_guard<std::mutex> lock(state_->mutex);
  state_->posted = state_->done = 0;
  state_->failed = false;
}

void CommThread::post_up_to(int64_t count) {
  {
    std::lock_guard<std::mutex> lock(state_->mutex);
    if (count <= state_->posted) return;
    state_->posted = count;
  }
  state_->work_cv.notify_one();
}

void CommThread::wait_all(int64_t count) {
  std::unique_lock<std::mutex> lock(state_->mutex);
  state_->done_cv.wait(lock, [&] { return state_->failed || state_->done >= count; });
  if (state_->error) std::rethrow_exception(std::exchange(state_->error, nullptr));
}

}  // namespace ts
