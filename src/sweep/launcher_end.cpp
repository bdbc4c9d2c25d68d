// What a task's launcher left when it ended (see launcher_end.h).
#include "sweep/launcher_end.h"

#include <fstream>

#include "core/host_info.h"
#include "core/run_marker.h"
#include "core/strings.h"
#include "core/timer.h"

namespace ts {
namespace fs = std::filesystem;

std::optional<RunMarker> fresh_marker(const std::string& path, fs::file_time_type since) {
  std::error_code ec;
  const auto written = fs::last_write_time(path, ec);
  if (ec || written < since) return std::nullopt;
  return read_marker_if_present(path);
}

std::string write_marker_here(const std::string& path, const std::string& reason) {
  RunMarker marker;
  marker.reason = reason;
  marker.host = host_name();
  marker.end = utc_timestamp();
  write_marker(path, marker);
  return reason;
}

// Why the job ended, on one line, from the launcher's output ("" when it says nothing known):
// Open MPI's "mpirun noticed that process rank 1 ...", MPICH's and Intel MPI's BAD TERMINATION
// box ("RANK 1 PID 4321 RUNNING AT n1, KILLED BY SIGNAL: 9"), Slurm's "srun: error: Node failure
// on n2" and "*** JOB 8 ON n1 CANCELLED AT ... DUE TO NODE FAILURE ***", and a rank's own last
// words ("trainscale run: rank 0 ...": a watchdog or an error).
static std::string launcher_notice(const std::string& log_path) {
  std::ifstream in(log_path);
  std::string openmpi, hydra, scheduler, ours;
  for (std::string line; std::getline(in, line);) {
    const auto text = line.find_first_not_of("= \t");
    if (text == std::string::npos) continue;
    const std::string trimmed = line.substr(text, line.find_last_not_of(" \t\r") + 1 - text);
    if (openmpi.empty() && trimmed.find("noticed that process rank") != std::string::npos) openmpi = trimmed;
    if (starts_with(trimmed, "PID ") || starts_with(trimmed, "RANK ") || starts_with(trimmed, "EXIT CODE:") ||
        starts_with(trimmed, "KILLED BY SIGNAL"))
      hydra += (hydra.empty() ? "" : ", ") + trimmed;
    if (scheduler.empty() && (trimmed.find("Node failure on") != std::string::npos ||
                              trimmed.find("DUE TO NODE FAILURE") != std::string::npos))
      scheduler = "Slurm: " + trimmed;
    if (ours.empty() && starts_with(trimmed, "trainscale run: rank ")) ours = trimmed;
  }
  std::string notice = !openmpi.empty() ? openmpi : !hydra.empty() ? "the launcher: " + hydra : "";
  for (const std::string* more : {&scheduler, &ours})
    if (!more->empty()) notice += (notice.empty() ? "" : "; ") + *more;
  return notice;
}

void drop_teardown_notice(const RunFiles& f, bool signalled) {
  if (signalled) return;
  const auto notice = read_marker_if_present(f.preempted);
  if (!notice || notice->status != kSignalledStatus) return;
  std::error_code ec;
  fs::remove(f.preempted, ec);
}

std::optional<std::string> record_launcher_end(const std::string& campaign_dir, const ManifestRun& run,
                                               const LauncherEnd& end) {
  const RunFiles f = run_files(campaign_dir, run.run_id);
  drop_teardown_notice(f, end.signalled);
  if (check_done(f, run).valid() || fresh_marker(f.failed, end.since) || fresh_marker(f.preempted, end.since))
    return std::nullopt;
  const std::string notice = end.log_path.empty() ? "" : launcher_notice(end.log_path);
  const std::string reason = write_marker_here(f.failed, "the launcher " + end.how + " without a result" +
                                                             (notice.empty() ? "" : " (" + notice + ")") +
                                                             (end.log_reference.empty() ? "" : "; " + end.log_reference));
  std::error_code ec;
  if (fresh_marker(f.running, end.since)) fs::remove(f.running, ec);  // this attempt's: its ranks are gone
  return reason;
}

std::optional<std::string> record_not_started(const std::string& campaign_dir, const ManifestRun& run) {
  const RunFiles f = run_files(campaign_dir, run.run_id);
  if (check_done(f, run).valid() || read_marker_if_present(f.preempted)) return std::nullopt;
  if (const auto running = read_marker_if_present(f.running); running && running->host == host_name() && attempt_alive(*running))
    return std::nullopt;
  return write_marker_here(f.preempted, "not started: its packed array task was stopped (preempted) before this run's "
                                        "turn; it starts when the task is requeued or with trainscale sweep resubmit --preempted");
}

}  // namespace ts
