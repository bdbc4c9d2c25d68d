// Recording SIGTERM / SIGUSR1 for the trainer (see preemption_signal.h).
#include "core/preemption_signal.h"

#include <pthread.h>
#include <signal.h>
#include <unistd.h>

#include <atomic>
#include <mutex>
#include <thread>

#include "core/error.h"

namespace ts {
namespace {

std::atomic<int> g_signal{0};
std::atomic<bool> g_starting_up{false};  // between install_preemption_handlers and end_startup_phase
std::mutex g_notice_mutex;
std::function<void(int)> g_notice;  // on_preemption_signal's, until it has been called
static_assert(std::atomic<int>::is_always_lock_free, "a signal handler may only store to a lock-free atomic");

// The handlers that were there before ours (an MPI library may count SIGUSR1 as its notice of a
// failed process, MPICH's ch4 does): ours calls them too, so they keep working.
struct sigaction g_previous_term, g_previous_usr1;

void chain(const struct sigaction& previous, int signal, siginfo_t* info, void* context) {
  if (previous.sa_flags & SA_SIGINFO) {
    if (previous.sa_sigaction) previous.sa_sigaction(signal, info, context);
  } else if (previous.sa_handler != SIG_DFL && previous.sa_handler != SIG_IGN && previous.sa_handler) {
    previous.sa_handler(signal);
  }
}

// A second preemption signal: the run did not reach a step boundary since the first (a long
// evaluation, a hang), and whoever sends it wants the process gone: it ends by SIGTERM now, as
// it would have without our handling. Async-signal-safe calls only.
[[noreturn]] void terminate_now() {
  struct sigaction default_action{};
  default_action.sa_handler = SIG_DFL;
  sigemptyset(&default_action.sa_mask);
  sigaction(SIGTERM, &default_action, nullptr);
  sigset_t term;
  sigemptyset(&term);
  sigaddset(&term, SIGTERM);
  pthread_sigmask(SIG_UNBLOCK, &term, nullptr);
  raise(SIGTERM);
  _exit(128 + SIGTERM);  // not reached: SIGTERM's default action ends the process
}

extern "C" void record_preemption_signal(int signal, siginfo_t* info, void* context) {
  chain(signal == SIGUSR1 ? g_previous_usr1 : g_previous_term, signal, info, context);
  if (g_signal.exchange(signal, std::memory_order_relaxed) != 0) terminate_now();
}

sigset_t preemption_set() {
  sigset_t set;
  sigemptyset(&set);
  sigaddset(&set, SIGTERM);
  sigaddset(&set, SIGUSR1);
  return set;
}

// The handler, for threads that do not block the signals (the MPI library's progress threads,
// started before us).
void install_recording_handler() {
  struct sigaction action{};
  action.sa_sigaction = record_preemption_signal;
  sigemptyset(&action.sa_mask);
  action.sa_flags = SA_RESTART | SA_SIGINFO;
  for (int signal : {SIGTERM, SIGUSR1}) {
    struct sigaction& previous = signal == SIGUSR1 ? g_previous_usr1 : g_previous_term;
    TS_CHECK(sigaction(signal, &action, &previous) == 0, "sigaction(" + signal_name(signal) + ") failed");
  }
}

// Takes the signals synchronously where no other thread may take them, and gives them to the
// handler that was there before ours as a handler would have.
// Every 0.1 s at most it also gives a recorded signal (its own or the handler's) to the notice.
void watch_preemption_signals() {
  const sigset_t set = preemption_set();
  const timespec tick{0, 100 * 1000 * 1000};
  for (;;) {
    siginfo_t info{};
    const int signal = sigtimedwait(&set, &info, &tick);
    if (signal > 0) record_preemption_signal(signal, &info, nullptr);
    if (g_signal.load(std::memory_order_relaxed) == 0) continue;
    std::lock_guard<std::mutex> lock(g_notice_mutex);
    if (!g_notice) continue;
    const std::function<void(int)> notice = std::move(g_notice);
    g_notice = nullptr;
    try {
      notice(g_signal.load(std::memory_order_relaxed));
    } catch (...) {  // the notice is a head start; the stop at the step boundary still says what failed
    }
  }
}

}  // namespace

// The signals are blocked in the calling thread and so in every thread it starts later
// (compute, loader, communication, OpenMP): with a handler free to interrupt any thread, about
// one signal in four ended in a corrupted heap (detected inside oneDNN calls) instead of a
// checkpoint, so the signal is taken where no computation runs: by the MPI library's own
// progress threads (the handler) or by the watcher thread (sigwait).
void install_preemption_handlers() {
  static std::once_flag once;
  std::call_once(once, [] {
    install_recording_handler();
    const sigset_t set = preemption_set();
    TS_CHECK(pthread_sigmask(SIG_BLOCK, &set, nullptr) == 0, "pthread_sigmask(SIG_BLOCK, SIGTERM SIGUSR1) failed");
    std::thread(watch_preemption_signals).detach();
    g_starting_up.store(true);
  });
}

StoppedDuringStartup::StoppedDuringStartup(int signal, const std::string& where)
    : RuntimeError("stopped by " + signal_name(signal) + " during start-up, before the first step (" + where + ")"),
      signal_(signal) {}

bool startup_stop_requested() {
  return g_starting_up.load(std::memory_order_relaxed) && g_signal.load(std::memory_order_relaxed) != 0;
}

void throw_stopped_during_startup(const std::string& where) { throw StoppedDuringStartup(preemption_signal(), where); }

void end_startup_phase() { g_starting_up.store(false); }

int preemption_signal() { return g_signal.load(std::memory_order_relaxed); }

void on_preemption_signal(std::function<void(int)> notice) {
  std::lock_guard<std::mutex> lock(g_notice_mutex);
  g_notice = std::move(notice);
}

std::string signal_name(int signal) {
  switch (signal) {
    case SIGTERM: return "SIGTERM";
    case SIGUSR1: return "SIGUSR1";
    case SIGINT: return "SIGINT";
    case SIGHUP: return "SIGHUP";
    case SIGKILL: return "SIGKILL";
  }
  return "signal " + std::to_string(signal);
}

}  // namespace ts
