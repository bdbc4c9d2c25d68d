// dist-internal: the communication thread of an exchange strategy. It runs numbered jobs
// (bucket reductions) 0, 1, 2, ... in order as they are posted, one at a time, and sleeps on a
// condition variable when it has nothing to do, so it takes no core from the compute threads.
//
// MPI threading: between reset() and the return of wait_all() the caller's thread makes no MPI
// call, and outside that window this thread makes none, so MPI sees one thread at a time
// (MPI_THREAD_SERIALIZED). Its own work (an optimizer step on a bucket, say) runs on this
// thread alone: it does not start a team of OpenMP threads beside the compute threads.
#pragma once

#include <cstdint>
#include <functional>
#include <memory>

namespace ts {

class CommThread {
 public:
  using Job = std::function<void(int64_t index)>;
  // Whether this build's communication thread can run MPI jobs: the thread needs
  // MPI_THREAD_SERIALIZED (dist/communicator.h mpi_threads_serialized); trainscale-sim's
  // inline one (dist/smpi/inline_comm_thread.cpp) makes no thread and always can.
  static bool can_call_mpi();
  explicit CommThread(Job job);
  // Joins the idle thread. Unwinding from an error in the middle of a step, the thread may sit
  // in a collective that other ranks will never join: then it is left running (detached, its
  // state kept alive) and the caller is about to end the job (Communicator::abort_all).
  ~CommThread();
  CommThread(const CommThread&) = delete;
  CommThread& operator=(const CommThread&) = delete;

  // A new round: no job posted, none done (the thread is idle).
  void reset();
  // Jobs [0, count) may run.
  void post_up_to(int64_t count);
  // Waits until jobs [0, count) are done; rethrows the first job's exception (the round is
  // given up then).
  void wait_all(int64_t count);

 private:
  struct State;
  std::shared_ptr<State> state_;
};

}  // namespace ts
