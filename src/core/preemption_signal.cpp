// Recording SIGTERM / SIGUSR1 for the trainer (see preemption_signal.h).
#include "core/preemption_signal.h"

#include <signal.h>

#include <atomic>
#include <cstring>

#include "core/error.h"

namespace ts {
namespace {

std::atomic<int> g_signal{0};
static_assert(std::atomic<int>::is_always_lock_free, "a signal handler may only store to a lock-free atomic");

extern "C" void record_preemption_signal(int signal) { g_signal.store(signal, std::memory_order_relaxed); }

}  // namespace

void install_preemption_handlers() {
  struct sigaction action;
  std::memset(&action, 0, sizeof action);
  action.sa_handler = record_preemption_signal;
  sigemptyset(&action.sa_mask);
  action.sa_flags = SA_RESTART;
  for (int signal : {SIGTERM, SIGUSR1})
    TS_CHECK(sigaction(signal, &action, nullptr) == 0, "sigaction(" + signal_name(signal) + ") failed");
}

int preemption_signal() { return g_signal.load(std::memory_order_relaxed); }

void clear_preemption_signal() { g_signal.store(0, std::memory_order_relaxed); }

std::string signal_name(int signal) {
  switch (signal) {
    case SIGTERM: return "SIGTERM";
    case SIGUSR1: return "SIGUSR1";
    case SIGINT: return "SIGINT";
    case SIGKILL: return "SIGKILL";
  }
  return "signal " + std::to_string(signal);
}

}  // namespace ts
