// The local executor (see local_executor.h).
#include "sweep/local_executor.h"

#include <algorithm>
#include <array>
#include <cerrno>
#include <chrono>
#include <csignal>
#include <cstdlib>
#include <cstring>
#include <filesystem>
#include <map>
#include <optional>
#include <ostream>
#include <thread>

#include <fcntl.h>
#include <sys/wait.h>
#include <unistd.h>

#include "core/error.h"
#include "core/host_info.h"
#include "core/preemption_signal.h"
#include "core/run_marker.h"
#include "core/strings.h"
#include "sweep/launcher_end.h"
#include "sweep/submit.h"

namespace ts {
namespace {

namespace fs = std::filesystem;
using Clock = std::chrono::steady_clock;

// The signal handler can only set flags: the latest interrupting signal and how many arrived.
// (A handler has no other way to reach the loop; these are the executor's only globals.)
volatile std::sig_atomic_t g_interrupt_signal = 0;
volatile std::sig_atomic_t g_interrupt_count = 0;

extern "C" void note_interrupt(int sig) {
  g_interrupt_signal = sig;
  g_interrupt_count = g_interrupt_count + 1;
}

// Catches the interrupting signals while the executor runs; restores what was there before.
class InterruptWatch {
 public:
  InterruptWatch() {
    g_interrupt_signal = 0;
    g_interrupt_count = 0;
    struct sigaction sa {};
    sa.sa_handler = note_interrupt;
    sigemptyset(&sa.sa_mask);
    sa.sa_flags = SA_RESTART;  // output and file I/O carry on; the loop polls the flags
    for (size_t i = 0; i < kSignals.size(); ++i) ::sigaction(kSignals[i], &sa, &saved_[i]);
  }
  ~InterruptWatch() {
    for (size_t i = 0; i < kSignals.size(); ++i) ::sigaction(kSignals[i], &saved_[i], nullptr);
  }
  InterruptWatch(const InterruptWatch&) = delete;
  InterruptWatch& operator=(const InterruptWatch&) = delete;

  int signal() const { return g_interrupt_signal; }
  int count() const { return g_interrupt_count; }

 private:
  static constexpr std::array<int, 4> kSignals = {SIGINT, SIGTERM, SIGHUP, SIGUSR1};
  std::array<struct sigaction, 4> saved_{};
};

// The live processes of session `sid` (/proc/<pid>/stat: the state, then ppid, pgrp and the
// session); zombies are dead and left out.
std::vector<pid_t> session_members(pid_t sid) {
  std::vector<pid_t> out;
  std::error_code ec;
  for (const auto& e : fs::directory_iterator("/proc", ec)) {
    const std::string name = e.path().filename().string();
    if (name.empty() || name.size() > 9 || name.find_first_not_of("0123456789") != std::string::npos) continue;
    const std::vector<std::string> fields = process_stat_fields(std::stol(name));
    if (fields.size() > 3 && fields[3] == std::to_string(sid) && fields[0] != "Z" && fields[0] != "X")
      out.push_back(static_cast<pid_t>(std::stol(name)));
  }
  return out;
}

// SIGKILL to every process left in session `sid`, until none is alive (a killed process takes
// a moment to die; 5 s at most).
void kill_session(pid_t sid) {
  const auto give_up = Clock::now() + std::chrono::seconds(5);
  for (auto members = session_members(sid); !members.empty() && Clock::now() < give_up; members = session_members(sid)) {
    for (pid_t p : members) ::kill(p, SIGKILL);
    std::this_thread::sleep_for(std::chrono::milliseconds(20));
  }
}

// `command` run through `prefix` as ssh runs a remote command: its words shell-quoted and joined.
std::vector<std::string> with_launcher_prefix(const std::vector<std::string>& prefix,
                                              const std::vector<std::string>& command) {
  if (prefix.empty()) return command;
  std::vector<std::string> quoted;
  for (const std::string& word : command) quoted.push_back(shell_quote(word));
  std::vector<std::string> out = prefix;
  out.push_back(join(quoted, " "));
  return out;
}

// How one run is started here: its command and its OpenMP threads (0: leave OMP_NUM_THREADS as
// the site's environment has it).
struct LocalLaunch {
  std::vector<std::string> argv;
  int threads = 0;
};

// The launcher command of every run in `indices`, checked to be runnable here.
std::map<int64_t, LocalLaunch> local_launch_commands(const Campaign& c, const std::vector<int64_t>& indices) {
  std::map<int64_t, LocalLaunch> argv_of;
  if (c.site.scheduler == "simulate") {  // trainscale-sim, no launcher
    for (int64_t i : indices) argv_of[i] = {simulate_command(c, i), 0};
    return argv_of;
  }
  for (const auto& g : group_by_shape(c, indices))  // validates gpu/mpi/storage against the site
    for (int64_t i : g.indices) {
      const SiteMpi mpi = shape_mpi(c.site, g.shape);
      auto cmd = launch_command(mpi, g.shape.workers);
      if (::access(cmd.back().c_str(), X_OK) != 0)
        throw ConfigError("site " + c.site.path + ": " +
                          (!g.shape.gpu.empty() && !c.site.gpu.at(g.shape.gpu).binary.empty() ? "gpu." + g.shape.gpu
                                                                                             : "mpi." + g.shape.mpi) +
                          ".binary: " + cmd.back() +
                          " is not an executable here; build it (scripts/build.sh) or fix `binary` in the site file");
      if (mpi.launcher_prefix.empty() && !program_on_path(cmd.front()))
        throw ConfigError("site " + c.site.path + ": mpi." + g.shape.mpi + ": the launcher '" + cmd.front() +
                          "' is not on PATH; install it or set launcher_command");
      if (!mpi.launcher_prefix.empty() && !program_on_path(mpi.launcher_prefix.front()))
        throw ConfigError("site " + c.site.path + ": mpi." + g.shape.mpi + ".launcher_prefix: '" +
                          mpi.launcher_prefix.front() + "' is not an executable here or on PATH" +
                          " (the test bed's agent: scripts/testbed.sh up)");
      cmd.insert(cmd.end(), {"run", "--manifest", c.dir, "--index", std::to_string(i)});
      argv_of[i] = {with_launcher_prefix(mpi.launcher_prefix, cmd), g.shape.threads};
    }
  return argv_of;
}

// Starts one run's launcher in a new session (its own process group, away from the terminal's
// Ctrl-C) with the site's environment and the run's OMP_NUM_THREADS, its output in
// logs/<run_id>.launcher.log.
pid_t start_local_run(const Campaign& c, const ManifestRun& run, LocalLaunch launch) {
  std::vector<std::string>& args = launch.argv;
  const std::string out_path = campaign_logs_dir(c.dir) + "/" + run.run_id + ".launcher.log";
  const pid_t pid = ::fork();
  if (pid < 0) throw RuntimeError("fork failed while starting run " + run.run_id + ": " + std::strerror(errno));
  if (pid > 0) return pid;
  ::setsid();
  for (const auto& [k, v] : c.site.env) ::setenv(k.c_str(), v.c_str(), 1);
  if (launch.threads > 0) ::setenv("OMP_NUM_THREADS", std::to_string(launch.threads).c_str(), 1);
  const int fd = ::open(out_path.c_str(), O_WRONLY | O_CREAT | O_APPEND, 0644);
  if (fd >= 0) {
    ::dup2(fd, 1);
    ::dup2(fd, 2);
    ::close(fd);
  }
  std::vector<char*> cargv;
  for (auto& a : args) cargv.push_back(a.data());
  cargv.push_back(nullptr);
  ::execvp(cargv[0], cargv.data());
  std::fprintf(stderr, "trainscale sweep submit: cannot start %s: %s\n", cargv[0], std::strerror(errno));
  ::_exit(127);
}

struct TaskResult {
  int64_t LocalRunSummary::*count;  // the summary's count of the outcome (nullptr: done or diverged)
  std::string text;  // "done", "failed: <reason>", ...
};

// What a finished launcher left: a complete result, a skip (exit 0 without a result: the task
// runner found the task's lock held), a fresh PREEMPTED or FAILED marker, or nothing, in
// which case this writes a FAILED marker saying what happened.
TaskResult task_result(const Campaign& c, const ManifestRun& run, int wstatus, fs::file_time_type started,
                       int interrupted_by) {
  const RunFiles f = run_files(c.dir, run.run_id);
  const DoneCheck done = check_done(f, run);
  if (done.valid())
    return done.marker->status == "diverged" ? TaskResult{nullptr, "diverged"} : TaskResult{nullptr, "done"};
  if (const auto unsupported = fresh_marker(f.unsupported, started))
    return {&LocalRunSummary::unsupported, "unsupported here: " + unsupported->reason};
  if (WIFEXITED(wstatus) && WEXITSTATUS(wstatus) == 0)
    return {&LocalRunSummary::skipped, "skipped: another process holds its lock (runs/" + run.run_id + ".lock): it runs elsewhere"};
  // A RUNNING marker whose process on this host is gone describes nothing any more.
  if (const auto running = read_marker_if_present(f.running); running && running->host == host_name() && !attempt_alive(*running)) {
    std::error_code ec;
    fs::remove(f.running, ec);
  }
  drop_teardown_notice(f, interrupted_by != 0);  // this executor's own signal is a preemption
  if (const auto preempted = fresh_marker(f.preempted, started))
    return {&LocalRunSummary::preempted, "preempted: " + (preempted->reason.empty() ? std::string("checkpoint written") : preempted->reason)};
  if (const auto failed = fresh_marker(f.failed, started)) return {&LocalRunSummary::failed, "failed: " + failed->reason};
  const std::string log = "see logs/" + run.run_id + ".launcher.log";
  if (interrupted_by != 0) {
    const std::string reason = "interrupted by " + signal_name(interrupted_by) +
                               ": the local executor stopped the task before it wrote a result or a checkpoint; " + log;
    return {&LocalRunSummary::failed, "failed: " + write_marker_here(f.failed, reason)};
  }
  LauncherEnd end;
  end.how = WIFEXITED(wstatus) ? "exited with code " + std::to_string(WEXITSTATUS(wstatus))
                               : "was killed by " + signal_name(WTERMSIG(wstatus));
  end.log_path = campaign_logs_dir(c.dir) + "/" + run.run_id + ".launcher.log";
  end.log_reference = log;
  end.since = started;
  const std::optional<std::string> reason = record_launcher_end(c.dir, run, end);
  return {&LocalRunSummary::failed, "failed: " + reason.value_or("the launcher " + end.how)};
}

// Why a queued task must not start now ("" = start it): already done, or an attempt that is
// alive (this host: its process; another host: trusted).
std::string reason_not_to_start(const Campaign& c, const ManifestRun& run) {
  const RunStatus st = run_status(c, run, {});
  if (st.state == RunState::done || st.state == RunState::diverged) return "skipped: already done";
  if (st.state == RunState::running) return "skipped: running elsewhere (" + st.reason + ")";
  if (st.state == RunState::unsupported) return "unsupported here: " + st.reason;
  return "";
}

struct LiveTask {
  int64_t index = 0;
  fs::file_time_type started;
};

// One run of the executor: starts tasks, reaps launchers, handles interrupts, reports.
class Executor {
 public:
  Executor(const Campaign& c, const std::vector<int64_t>& indices, int throttle, std::ostream& progress)
      : c_(c), indices_(indices), throttle_(std::max(1, throttle)), progress_(progress),
        argv_of_(local_launch_commands(c, indices)),
        grace_(std::chrono::seconds(c.site.signal_seconds > 0 ? c.site.signal_seconds : 60)) {}

  LocalRunSummary run() {
    std::error_code ec;
    fs::create_directories(campaign_logs_dir(c_.dir), ec);
    InterruptWatch watch;
    while (true) {
      if (watch.count() > 0) interrupt(watch);
      if (!sum_.interrupted_by) start_ready();
      reap();
      if (live_.empty() && (sum_.interrupted_by || next_ >= indices_.size())) break;
      std::this_thread::sleep_for(std::chrono::milliseconds(50));
    }
    if (sum_.interrupted_by) sum_.not_started = static_cast<int64_t>(indices_.size() - next_);
    return sum_;
  }

 private:
  void start_ready() {
    while (next_ < indices_.size() && static_cast<int>(live_.size()) < throttle_) {
      const int64_t index = indices_[next_++];
      const std::string reason = reason_not_to_start(c_, c_.runs[index]);
      if (!reason.empty()) {
        ++(reason.rfind("unsupported", 0) == 0 ? sum_.unsupported : sum_.skipped);
        report(index, reason);
        continue;
      }
      LiveTask task{index, fs::file_time_type::clock::now() - std::chrono::seconds(1)};  // file times are coarse
      live_[start_local_run(c_, c_.runs[index], argv_of_.at(index))] = task;
    }
  }

  // The first interrupt: SIGUSR1 to every launcher (they forward it to their ranks) and a
  // deadline; at the deadline or a second interrupt: every process of their sessions killed.
  void interrupt(const InterruptWatch& watch) {
    if (!sum_.interrupted_by) {
      sum_.interrupted_by = watch.signal();
      deadline_ = Clock::now() + grace_;
      for (const auto& [pid, task] : live_)
        if (::kill(-pid, SIGUSR1) != 0) ::kill(pid, SIGUSR1);  // not yet its own group: the launcher itself
      progress_ << "interrupted by " << signal_name(sum_.interrupted_by) << ": no new runs start; " << live_.size()
                << " running got SIGUSR1 (checkpoint and stop); killed in "
                << std::chrono::duration_cast<std::chrono::seconds>(grace_).count() << " s or at a second interrupt"
                << std::endl;
    }
    if (!killed_ && (watch.count() > 1 || Clock::now() >= deadline_)) {
      killed_ = true;
      for (const auto& [pid, task] : live_) {
        ::kill(pid, SIGKILL);
        kill_session(pid);
      }
      if (!live_.empty()) progress_ << "killed " << live_.size() << " run(s) that were still running" << std::endl;
    }
  }

  void reap() {
    int wstatus = 0;
    pid_t pid;
    while ((pid = ::waitpid(-1, &wstatus, WNOHANG)) > 0) {
      auto it = live_.find(pid);
      if (it == live_.end()) continue;
      const LiveTask task = it->second;
      live_.erase(it);
      kill_session(pid);  // nothing of a task outlives it (ranks whose mpirun died)
      const TaskResult r = task_result(c_, c_.runs[task.index], wstatus, task.started, sum_.interrupted_by);
      if (r.count) ++(sum_.*r.count);
      report(task.index, r.text);
    }
  }

  void report(int64_t index, const std::string& outcome) {
    ++sum_.finished;
    const int64_t n = static_cast<int64_t>(indices_.size());
    const double elapsed = std::chrono::duration<double>(Clock::now() - t0_).count();
    const double eta = elapsed / static_cast<double>(sum_.finished) * static_cast<double>(n - sum_.finished);
    progress_ << "[" << sum_.finished << "/" << n << "] index " << index << " " << run_label(c_, c_.runs[index]) << ": " << outcome
              << " | failures " << sum_.failed << " | elapsed " << duration_text(elapsed) << " | ETA "
              << (sum_.finished == n ? std::string("0s") : duration_text(eta)) << std::endl;
  }

  const Campaign& c_;
  const std::vector<int64_t>& indices_;
  const int throttle_;
  std::ostream& progress_;
  const std::map<int64_t, LocalLaunch> argv_of_;
  const Clock::duration grace_;
  const Clock::time_point t0_ = Clock::now();
  std::map<pid_t, LiveTask> live_;
  size_t next_ = 0;
  Clock::time_point deadline_;
  bool killed_ = false;
  LocalRunSummary sum_;
};

}  // namespace

LocalRunSummary run_local(const Campaign& campaign, const std::vector<int64_t>& indices, int throttle, std::ostream& progress) {
  return Executor(campaign, indices, throttle, progress).run();
}

// trainscale-sim: the site's simulate.binary (relative: from the current directory), else the one
// beside the running trainscale.
static std::string simulator_binary(const Site& site) {
  if (!site.simulate.binary.empty())
    return fs::absolute(fs::path(site.simulate.binary)).lexically_normal().string();
  std::error_code ec;
  const fs::path self = fs::read_symlink("/proc/self/exe", ec);
  if (ec) throw RuntimeError("cannot find the running trainscale binary (/proc/self/exe): " + ec.message() +
                             "; name `simulate.binary` in the site file");
  return (self.parent_path() / "trainscale-sim").string();
}

std::vector<std::string> simulate_command(const Campaign& c, int64_t index) {
  const SiteSimulate& sim = c.site.simulate;
  const std::string binary = simulator_binary(c.site);
  if (::access(binary.c_str(), X_OK) != 0)
    throw ConfigError("site " + c.site.path + ": simulate.binary: " + binary +
                      " is not an executable here; build trainscale-sim (scripts/build.sh, with libsimgrid-dev "
                      "installed) or set simulate.binary");
  const fs::path cluster = fs::absolute(fs::path(sim.cluster)).lexically_normal();
  std::error_code not_a_path;  // a site file's text may name anything (too long a path): no throw
  if (!fs::is_regular_file(cluster, not_a_path))
    throw ConfigError("site " + c.site.path + ": simulate.cluster: " + cluster.string() +
                      " is not a file; name a cluster file (configs/clusters/*.yaml)");
  std::vector<std::string> cmd{binary, "run", "--manifest", c.dir, "--index", std::to_string(index),
                               "--cluster", cluster.string(), "--steps", std::to_string(sim.steps)};
  for (const std::string& s : sim.cluster_set) cmd.insert(cmd.end(), {"--cluster-set", s});
  if (!sim.network_model.empty()) cmd.insert(cmd.end(), {"--network-model", sim.network_model});
  if (!sim.coll_selector.empty()) cmd.insert(cmd.end(), {"--coll-selector", sim.coll_selector});
  return cmd;
}

}  // namespace ts
