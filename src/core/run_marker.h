// The markers next to a run file (docs/sweeps.md "Campaign directory"): <run>.DONE (finished,
// status ok or diverged), <run>.FAILED (the reason of the last failed attempt) and <run>.RUNNING
// (an attempt in progress), <run>.PREEMPTED (stopped by a signal after a checkpoint; resumable). One format for all three, written and read only here: "key: value"
// lines in a fixed key order, each value on one line (newlines become spaces), written
// atomically (core/file_io.h). Writers: the trainer (FAILED of a single run), `trainscale run
// --manifest` (RUNNING, DONE, FAILED), the trainer again (PREEMPTED) and the local executor (FAILED of a launcher that died);
// readers: `sweep status`, the local executor and the analysis package.
#pragma once

#include <optional>
#include <string>

namespace ts {

enum class MarkerKind { done, failed, running, preempted, unsupported };

// "runs/x-r0.h5" or "runs/x-r0" -> "runs/x-r0.DONE" | ".FAILED" | ".RUNNING" | ".PREEMPTED" |
// ".UNSUPPORTED".
std::string marker_path(const std::string& run_file, MarkerKind kind);

// Every field is optional: empty strings, 0 and nullopt are left out of the text.
struct RunMarker {
  std::string status;    // DONE: ok | diverged; PREEMPTED: kSignalledStatus or empty
  std::string reason;    // FAILED: what went wrong and what to do
  std::string run_file;  // DONE: the run file's name
  int attempt = 0;       // campaign runs: 1, 2, ...
  std::string log;       // campaign runs: logs/<run_id>.attempt<N>.log
  std::string host;      // where the attempt ran
  long pid = 0;          // RUNNING: the process of the attempt
  // RUNNING: that process's start time, clock ticks since boot (/proc/PID/stat field 22): a pid
  // the kernel has since given to another process does not match it (sweep/campaign.h).
  long long pid_start = 0;
  std::optional<double> stage_in_s;  // DONE: seconds spent staging the data set in
  std::string start, end;            // ISO 8601 (UTC)
  // PREEMPTED: the signal that stopped the run, the last step it finished and the checkpoint it
  // wrote there (a file name in the run's directory; "" when none could be written).
  std::string signal;
  long step = 0;
  std::string checkpoint;
};

// A PREEMPTED marker's status when rank 0 wrote it at the signal (train/preemption_notice.h) and
// no stop at a step boundary replaced it. A launcher tearing a job down after a rank died sends
// the survivors the same SIGTERM as a preemption does, so an executor that sent no signal itself
// reads such a marker as the launcher's, not as a preemption (sweep/local_executor.cpp).
inline constexpr const char* kSignalledStatus = "signalled";

std::string marker_text(const RunMarker& marker);
// Unknown keys are ignored. A text without any known key (a plain-text reason, as markers
// were before this format) becomes the reason as a whole.
RunMarker parse_marker(const std::string& text);

// Atomically; on a full disk through the marker's reserve when one is held (core/marker_reserve.h).
void write_marker(const std::string& path, const RunMarker& marker);
// RuntimeError naming the file when it cannot be read.
RunMarker read_marker(const std::string& path);
// The marker, or nullopt when there is none (or it vanished while being read: markers come and
// go while runs start and end).
std::optional<RunMarker> read_marker_if_present(const std::string& path);
// "out of memory [attempt 2, log: logs/x.attempt2.log]": a FAILED marker's reason with its
// attempt and log, for status lines.
std::string failure_summary(const RunMarker& marker);

}  // namespace ts
