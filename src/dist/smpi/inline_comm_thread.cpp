// CommThread for simulated ranks (dist/smpi/simulation.h): jobs run in the caller's thread as
// soon as they are posted, in order, one at a time; wait_all runs what is left and rethrows the
// first failure. SMPI lets only a rank's own actor call MPI, so there is no second thread here;
// the simulator (sim/sim_rank.cpp) puts backward's modelled compute in the background instead,
// so a job still runs while backward goes on, and it starts exactly when the real thread would
// start it: at once when posted, or when the job before it ends.
#include <exception>
#include <string>
#include <utility>

#include "core/error.h"
#include "dist/comm_thread.h"

namespace ts {

struct CommThread::State {
  Job job;
  int64_t posted = 0, done = 0;
  bool running = false;  // a job is in progress (a job that posts more must not recurse)
  std::exception_ptr error;

  void run_posted() {
    if (running) return;
    running = true;
    while (!error && done < posted) {
      try {
        job(done);
        ++done;
      } catch (...) {
        error = std::current_exception();  // the rest of the round is given up
      }
    }
    running = false;
  }
};

bool CommThread::can_call_mpi() { return true; }  // no second thread: the rank's own actor calls MPI

CommThread::CommThread(Job job) : state_(std::make_shared<State>()) { state_->job = std::move(job); }

CommThread::~CommThread() = default;

void CommThread::reset() {
  state_->posted = state_->done = 0;
  state_->error = nullptr;
}

void CommThread::post_up_to(int64_t count) {
  if (count <= state_->posted) return;
  state_->posted = count;
  state_->run_posted();
}

void CommThread::wait_all(int64_t count) {
  state_->run_posted();
  if (state_->error) std::rethrow_exception(std::exchange(state_->error, nullptr));
  if (state_->done < count)  // the real thread would wait forever
    throw RuntimeError("communication thread: waiting for " + std::to_string(count) + " jobs of which only " +
                       std::to_string(state_->posted) + " were posted");
}

}  // namespace ts
