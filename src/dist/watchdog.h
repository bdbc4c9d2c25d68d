// dist-internal: the watchdog of a communicator's blocking exchanges (docs/reliability.md
// "Failures"). A rank that dies, stops (SIGSTOP, a hung node) or loses its network never joins
// the next collective, and MPI gives the ranks waiting for it no error: they would wait until
// the walltime. Every blocking exchange of a Communicator (its collectives, allreduce_sum's
// algorithms, shm's shared-memory waits) runs inside an ExchangeGuard; a thread of the watchdog
// wakes a few times per timeout and, when one exchange has been waiting longer than the
// timeout, reports (stderr, the TimeoutReport: the FAILED marker) and ends the whole job with
// MPI_Abort (exit 1), naming what it waited in and, for ranks on its own host, whether each is
// running, stopped or gone (from /proc). The launcher then ends the other ranks.
//
// MPI threading: the watchdog's thread makes one MPI call, MPI_Abort, while another thread may be
// blocked in MPI. MPI_THREAD_SERIALIZED does not promise that this works; Open MPI and MPICH
// both end the job (tested in tests/python/test_failures_ranks.py), and a fallback _exit(1)
// after kAbortGraceSeconds ends this rank if MPI_Abort itself hangs.
#pragma once

#include <mpi.h>

#include <atomic>
#include <condition_variable>
#include <cstdint>
#include <mutex>
#include <string>
#include <thread>
#include <vector>

#include "dist/communicator.h"

namespace ts {

// Seconds MPI_Abort gets before the watchdog ends this process itself.
constexpr double kAbortGraceSeconds = 10.0;
// A wait longer than this (or a quarter of the timeout, if less) is said in the progress output
// once, long before the timeout ends the job: with the default dist.timeout_s of 600 s a stopped
// peer would otherwise go unmentioned for ten minutes.
constexpr double kSlowPeerNoticeSeconds = 30.0;

class ExchangeWatchdog {
 public:
  // Watches exchanges on `comm` (MPI_Abort's communicator) of rank `rank`; disarmed (timeout 0).
  ExchangeWatchdog(MPI_Comm comm, int rank);
  ~ExchangeWatchdog();  // stops its thread
  ExchangeWatchdog(const ExchangeWatchdog&) = delete;
  ExchangeWatchdog& operator=(const ExchangeWatchdog&) = delete;

  // Every exchange must complete within `seconds` (0: no bound; the thread starts on first use).
  void set_timeout(double seconds);
  double timeout() const;
  // Every rank's process id and host, in rank order, for the report.
  void set_peers(std::vector<long> pids, std::vector<std::string> hosts);
  std::string peers_text() const;  // "0 n1:4321, 1 n1:4322"
  void set_report(TimeoutReport report);
  bool has_report() const;

  // An exchange begins / ends on some thread (nested exchanges count once: the outermost's
  // start and name are kept). `what` must outlive the exchange (a string literal).
  void enter(const char* what);
  void leave();

 private:
  void watch();
  [[noreturn]] void fire(const char* what, double waited);
  ExchangeTimeout describe(const char* what, double waited) const;
  // The other ranks of this host, each running, stopped or gone (" Rank 1 (pid 42, this host)
  // is stopped ...."), and those elsewhere; sets rank0_answering. Call with mutex_ held.
  std::string peer_states(bool& rank0_answering) const;
  // A wait past the notice: one line on stdout, by rank 0 (or by a rank that sees rank 0 stopped).
  void notice_slow_peer(const char* what, double waited) const;

  const MPI_Comm comm_;
  const int rank_;
  mutable std::mutex mutex_;
  std::condition_variable wake_;
  double timeout_s_ = 0;
  bool stop_ = false;
  std::vector<long> pids_;
  std::vector<std::string> hosts_;
  TimeoutReport report_;
  std::thread thread_;
  std::atomic<int> depth_{0};
  std::atomic<int64_t> since_ns_{0};  // steady clock of the outermost pending exchange; 0: none
  std::atomic<const char*> what_{nullptr};
};

// One blocking exchange under the communicator's watchdog (none: a world of one rank).
class ExchangeGuard {
 public:
  ExchangeGuard(ExchangeWatchdog* watchdog, const char* what) : watchdog_(watchdog) {
    if (watchdog_) watchdog_->enter(what);
  }
  ~ExchangeGuard() {
    if (watchdog_) watchdog_->leave();
  }
  ExchangeGuard(const ExchangeGuard&) = delete;
  ExchangeGuard& operator=(const ExchangeGuard&) = delete;

 private:
  ExchangeWatchdog* watchdog_;
};

}  // namespace ts
