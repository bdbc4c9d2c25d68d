// What a campaign task's launcher left when it ended (docs/sweeps.md "Task outcomes"): the task
// records its own outcome (DONE, FAILED, PREEMPTED); when the launcher ended without one (a rank
// killed, a lost node, a launcher that could not start), whoever waited for the launcher (the
// local executor, or the Slurm/PBS job script through `trainscale sweep record-end`) writes the
// FAILED marker with what the launcher and the scheduler said.
#pragma once

#include <filesystem>
#include <optional>
#include <string>

#include "sweep/campaign.h"

namespace ts {

// The marker at `path` when it was written since `since` (markers of earlier attempts do not
// describe this one), else nullopt.
std::optional<RunMarker> fresh_marker(const std::string& path, std::filesystem::file_time_type since);

// Writes the marker at `path` that says `reason`, with this host and the time now; returns `reason`.
std::string write_marker_here(const std::string& path, const std::string& reason);

// Removes the run's PREEMPTED marker when it is still at kSignalledStatus (core/run_marker.h) and
// nobody sent the task a stop signal (`signalled` false): the SIGTERM rank 0 saw was the launcher
// ending the job after a rank died, so the marker describes no preemption.
void drop_teardown_notice(const RunFiles& f, bool signalled);

struct LauncherEnd {
  std::string how;            // "exited with code 1", "was killed by SIGKILL"
  std::string log_path;       // the launcher's output, read for its notice ("" = none)
  std::string log_reference;  // where the reason sends the reader: "see logs/x.launcher.log"
  std::filesystem::file_time_type since;  // the task started then: older markers are earlier attempts'
  // false: nobody sent the task a stop signal, so a PREEMPTED marker still at kSignalledStatus
  // (core/run_marker.h) came from the launcher ending the job after a rank died: not an outcome.
  bool signalled = true;
};

// nullopt when the attempt recorded its outcome (a complete result, or a FAILED or PREEMPTED
// marker written since `end.since`); else writes the FAILED marker "the launcher <how> without a
// result (<notice>); <log_reference>", removes the attempt's RUNNING marker (its processes are
// gone) and returns that reason.
std::optional<std::string> record_launcher_end(const std::string& campaign_dir, const ManifestRun& run,
                                               const LauncherEnd& end);

// A run of a packed array task that never started because the task was stopped (preempted)
// before its turn: unless the run is done, has a PREEMPTED marker already or a live attempt,
// writes its PREEMPTED marker saying so (no checkpoint: the run starts from step 0 when the task
// is requeued or the run resubmitted with --preempted) and returns that reason; else nullopt.
std::optional<std::string> record_not_started(const std::string& campaign_dir, const ManifestRun& run);

}  // namespace ts
