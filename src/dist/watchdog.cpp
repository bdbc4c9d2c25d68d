// The exchange watchdog (see watchdog.h).
#include "dist/watchdog.h"

#include <signal.h>
#include <unistd.h>

#include <algorithm>
#include <chrono>
#include <cstdlib>
#include <fstream>
#include <iostream>
#include <sstream>

#include "core/error.h"
#include "core/strings.h"

namespace ts {
namespace {

int64_t now_ns() {
  return std::chrono::duration_cast<std::chrono::nanoseconds>(std::chrono::steady_clock::now().time_since_epoch())
      .count();
}

std::string this_host() {
  char name[MPI_MAX_PROCESSOR_NAME] = {0};
  int len = 0;
  MPI_Get_processor_name(name, &len);  // a local query
  return std::string(name, static_cast<size_t>(std::max(len, 0)));
}

// The state letter of a process of this host (/proc/<pid>/stat: R, S, D, T, t, Z, ...), or 0
// when there is no such process.
char process_state(long pid) {
  std::ifstream in("/proc/" + std::to_string(pid) + "/stat");
  std::string stat;
  if (!std::getline(in, stat)) return 0;
  const auto paren = stat.rfind(')');  // the command name may hold spaces and parentheses
  return paren != std::string::npos && paren + 2 < stat.size() ? stat[paren + 2] : '?';
}

std::string state_text(char state) {
  switch (state) {
    case 0: return "is gone (it died or was killed)";
    case 'Z': return "has died (zombie)";
    case 'T': case 't': return "is stopped (SIGSTOP or a debugger)";
    default: return "is running";
  }
}

std::string seconds_text(double s) { return format_number("%.1f", s); }

}  // namespace

ExchangeWatchdog::ExchangeWatchdog(MPI_Comm comm, int rank) : comm_(comm), rank_(rank) {}

ExchangeWatchdog::~ExchangeWatchdog() {
  {
    std::lock_guard<std::mutex> lock(mutex_);
    stop_ = true;
  }
  wake_.notify_all();
  if (thread_.joinable()) thread_.join();
}

void ExchangeWatchdog::set_timeout(double seconds) {
  {
    std::lock_guard<std::mutex> lock(mutex_);
    timeout_s_ = std::max(0.0, seconds);
    if (timeout_s_ > 0 && !thread_.joinable()) thread_ = std::thread([this] { watch(); });
  }
  wake_.notify_all();
}

double ExchangeWatchdog::timeout() const {
  std::lock_guard<std::mutex> lock(mutex_);
  return timeout_s_;
}

void ExchangeWatchdog::set_peers(std::vector<long> pids, std::vector<std::string> hosts) {
  std::lock_guard<std::mutex> lock(mutex_);
  pids_ = std::move(pids);
  hosts_ = std::move(hosts);
}

std::string ExchangeWatchdog::peers_text() const {
  std::lock_guard<std::mutex> lock(mutex_);
  std::string text;
  for (size_t r = 0; r < pids_.size(); ++r)
    text += (r ? ", " : "") + std::to_string(r) + " " + (r < hosts_.size() ? hosts_[r] : "?") + ":" +
            std::to_string(pids_[r]);
  return text;
}

void ExchangeWatchdog::set_report(TimeoutReport report) {
  std::lock_guard<std::mutex> lock(mutex_);
  report_ = std::move(report);
}

bool ExchangeWatchdog::has_report() const {
  std::lock_guard<std::mutex> lock(mutex_);
  return static_cast<bool>(report_);
}

void ExchangeWatchdog::enter(const char* what) {
  if (depth_.fetch_add(1) == 0) {
    what_.store(what);
    since_ns_.store(now_ns());
  }
}

void ExchangeWatchdog::leave() {
  if (depth_.fetch_sub(1) == 1) since_ns_.store(0);
}

// Wakes about eight times per timeout (between 20 times a second and once a second). A wake-up
// far later than asked means this process itself did not run (it was stopped, and SIGCONT lets
// it go on while the launcher ends the job): the wait is counted again from then, so a rank
// that was the one stopped does not blame the others.
void ExchangeWatchdog::watch() {
  std::unique_lock<std::mutex> lock(mutex_);
  int64_t last_wake = now_ns(), resumed = 0, noticed = 0;
  while (!stop_) {
    const double period = timeout_s_ > 0 ? std::clamp(timeout_s_ / 8, 0.05, 1.0) : 1.0;
    wake_.wait_for(lock, std::chrono::duration<double>(period));
    const int64_t now = now_ns();
    if (static_cast<double>(now - last_wake) * 1e-9 > 4 * period + 1.0) resumed = now;
    last_wake = now;
    if (stop_ || timeout_s_ <= 0) continue;
    const int64_t since = since_ns_.load();
    if (since == 0) continue;
    const double waited = static_cast<double>(now - std::max(since, resumed)) * 1e-9;
    if (waited <= timeout_s_) {
      if (waited > std::min(kSlowPeerNoticeSeconds, timeout_s_ / 4) && noticed != since) {
        noticed = since;  // once per exchange
        lock.unlock();
        notice_slow_peer(what_.load(), waited);
        lock.lock();
      }
      continue;
    }
    lock.unlock();
    fire(what_.load(), waited);
  }
}

ExchangeTimeout ExchangeWatchdog::describe(const char* what, double waited) const {
  std::lock_guard<std::mutex> lock(mutex_);
  const std::string host = this_host();
  std::ostringstream out;
  out << "rank " << rank_ << " (host " << host << ", pid " << ::getpid() << "): " << (what ? what : "an exchange")
      << " has not completed after " << seconds_text(waited) << " s (dist.timeout_s = " << seconds_text(timeout_s_)
      << "): another rank stopped answering.";
  ExchangeTimeout result;
  out << peer_states(result.rank0_answering);
  out << " A rank that dies, stops or loses its node never joins a collective, so the job is ended now (MPI_Abort,"
      << " exit 1) instead of waiting until the walltime; if a rank legitimately needs longer (a large checkpoint"
      << " on a slow file system), raise dist.timeout_s.";
  result.reason = out.str();
  return result;
}

std::string ExchangeWatchdog::peer_states(bool& rank0_answering) const {
  const std::string host = this_host();
  std::ostringstream out;
  std::vector<std::string> elsewhere;
  int listed = 0;
  for (size_t r = 0; r < pids_.size(); ++r) {
    if (static_cast<int>(r) == rank_) continue;
    if (r < hosts_.size() && hosts_[r] != host) {
      elsewhere.push_back(std::to_string(r));
      continue;
    }
    const char state = process_state(pids_[r]);
    const bool answering = state != 0 && state != 'Z' && state != 'T' && state != 't';
    if (r == 0) rank0_answering = answering;
    if (listed++ < 16) out << " Rank " << r << " (pid " << pids_[r] << ", this host) " << state_text(state) << ".";
  }
  if (!elsewhere.empty())
    out << " Ranks on other hosts (" << elsewhere.size() << ", first " << elsewhere.front()
        << ") cannot be checked from here; their launcher's log says which one ended.";
  return out.str();
}

void ExchangeWatchdog::notice_slow_peer(const char* what, double waited) const {
  std::lock_guard<std::mutex> lock(mutex_);
  bool rank0_answering = true;
  const std::string peers = peer_states(rank0_answering);
  if (rank_ != 0 && rank0_answering) return;  // rank 0 says it, once for the job
  std::cout << "note: rank " << rank_ << " (host " << this_host() << ") has waited " << seconds_text(waited) << " s in "
            << (what ? what : "an exchange") << " for a rank that has not answered." << peers
            << " The run ends if the wait reaches dist.timeout_s = " << seconds_text(timeout_s_)
            << " s (docs/reliability.md \"Failures\" says how to size it)." << std::endl;
}

namespace {

void exit_failed(int) { _exit(kExitFailed); }

// MPICH's MPI_Abort tells hydra, then calls exit(): its handlers tear down the transport (UCX)
// while the main thread is still blocked inside it, and that can crash (SIGSEGV in
// ucs_handle_error, seen in CI). The abort is already on its way, so a crash from here on ends
// this rank with the watchdog's exit code instead of replacing it with a signal's.
void exit_on_teardown_crash() {
  struct sigaction action = {};
  action.sa_handler = exit_failed;
  sigemptyset(&action.sa_mask);
  for (int sig : {SIGSEGV, SIGBUS, SIGABRT, SIGILL, SIGFPE}) sigaction(sig, &action, nullptr);
}

}  // namespace

void ExchangeWatchdog::fire(const char* what, double waited) {
  const ExchangeTimeout timeout = describe(what, waited);
  std::cerr << ("trainscale run: " + timeout.reason + "\n") << std::flush;  // one write: ranks share mpirun's stderr
  TimeoutReport report;
  {
    std::lock_guard<std::mutex> lock(mutex_);
    report = report_;
  }
  if (report) {
    try {
      report(timeout);
    } catch (const std::exception& e) {
      std::cerr << ("trainscale run: rank " + std::to_string(rank_) + ": the failure could not be recorded: " + e.what() + "\n")
                << std::flush;
    }
  }
  exit_on_teardown_crash();
  // If MPI_Abort hangs (another thread is inside MPI), this rank still ends.
  std::thread([] {
    std::this_thread::sleep_for(std::chrono::duration<double>(kAbortGraceSeconds));
    std::_Exit(kExitFailed);
  }).detach();
  MPI_Abort(comm_, kExitFailed);
  std::_Exit(kExitFailed);
}

}  // namespace ts
