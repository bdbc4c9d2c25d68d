// train-internal: the PREEMPTED marker written the moment a preemption signal arrives, before the
// run reaches its step boundary. A launcher may kill the ranks before they get there: Open MPI's
// mpirun, sent SIGTERM, passes SIGTERM on to the ranks one second later (after a SIGCONT) and
// SIGKILLs them one second after that (odls_base_sigkill_timeout), and a step plus a checkpoint
// can take longer on a loaded node. Without this notice such a run left no marker at all; with
// it, the marker names the newest checkpoint on disk at the signal (a resume continues from the
// newest valid one either way), and the stop at the boundary replaces it with the new one.
#pragma once

#include <string>

namespace ts {

class PreemptionNotice {
 public:
  // Rank 0 (`active`): from now until close(), a preemption signal writes the marker beside
  // `run_path` (out_dir/run_id.h5) naming the newest checkpoint of `run_id` in `out_dir`.
  PreemptionNotice(bool active, std::string out_dir, std::string run_id, std::string run_path, int attempt);
  ~PreemptionNotice();
  PreemptionNotice(const PreemptionNotice&) = delete;
  PreemptionNotice& operator=(const PreemptionNotice&) = delete;

  // No notice after this (waits for one being written): the stop writes the final marker.
  void close();
  // The run finished after all (a signal during its last step): removes a marker the notice wrote.
  void withdraw();

 private:
  bool active_, root_;
  std::string out_dir_, run_id_, run_path_;
  int attempt_;
};

}  // namespace ts
