// A start-up stopped by a preemption signal: exit 4 or 1 (see startup_stop.h).
#include "train/startup_stop.h"

#include <filesystem>

#include "core/host_info.h"
#include "core/run_marker.h"
#include "core/timer.h"
#include "train/checkpoint.h"

namespace ts {

void end_stopped_startup(const StoppedDuringStartup& stop, const std::string& out_dir, const std::string& run_id,
                         Communicator& comm) {
  const auto checkpoints = list_checkpoints(out_dir, run_id);
  const std::string who = comm.size() > 1 ? "rank " + std::to_string(comm.rank()) + " " : "";
  if (checkpoints.empty())
    throw RuntimeError(who + stop.what() + "; run " + run_id + " has no checkpoint in " + out_dir +
                       " to resume from, so it failed and starts again from step 0 when run again");
  const std::string checkpoint = std::filesystem::path(checkpoints.front().second).filename().string();
  const std::string what = who + stop.what() + "; checkpoint " + checkpoint +
                           " (an earlier attempt's) stays: continue with trainscale run --resume";
  RunMarker marker;
  marker.reason = "preempted by " + what;
  marker.signal = signal_name(stop.signal());
  marker.step = static_cast<long>(checkpoints.front().first);
  marker.checkpoint = checkpoint;
  marker.host = host_name();
  marker.end = utc_timestamp();
  write_marker(marker_path(out_dir + "/" + run_id + ".h5", MarkerKind::preempted), marker);
  throw StartupPreemptedError(what);
}

}  // namespace ts
