// The PREEMPTED marker at the signal (see preemption_notice.h).
#include "train/preemption_notice.h"

#include <filesystem>
#include <utility>

#include "core/host_info.h"
#include "core/preemption_signal.h"
#include "core/run_marker.h"
#include "core/timer.h"
#include "train/checkpoint.h"

namespace ts {
namespace {

void write_notice(int signal, const std::string& out_dir, const std::string& run_id, const std::string& run_path,
                  int attempt) {
  const auto checkpoints = list_checkpoints(out_dir, run_id);
  RunMarker marker;
  marker.status = kSignalledStatus;  // not yet confirmed by a stop at a step boundary
  marker.signal = signal_name(signal);
  marker.attempt = attempt;
  marker.host = host_name();
  marker.end = utc_timestamp();
  if (!checkpoints.empty()) {
    marker.step = static_cast<long>(checkpoints.front().first);
    marker.checkpoint = std::filesystem::path(checkpoints.front().second).filename().string();
  }
  marker.reason = "preempted by " + marker.signal + ", stopping at the next step boundary (this marker is replaced " +
                  "then; if it is not, the launcher ended the job first and the newest checkpoint was " +
                  (checkpoints.empty() ? std::string("none: the run starts again at step 0") : marker.checkpoint) + ")";
  write_marker(marker_path(run_path, MarkerKind::preempted), marker);
}

}  // namespace

PreemptionNotice::PreemptionNotice(bool active, std::string out_dir, std::string run_id, std::string run_path,
                                   int attempt)
    : active_(active), root_(active), out_dir_(std::move(out_dir)), run_id_(std::move(run_id)), run_path_(std::move(run_path)),
      attempt_(attempt) {
  if (!active_) return;
  on_preemption_signal([out_dir = out_dir_, run_id = run_id_, run_path = run_path_, attempt](int signal) {
    write_notice(signal, out_dir, run_id, run_path, attempt);
  });
}

PreemptionNotice::~PreemptionNotice() { close(); }

void PreemptionNotice::close() {
  if (active_) on_preemption_signal(nullptr);
  active_ = false;
}

void PreemptionNotice::withdraw() {
  close();
  if (!root_ || preemption_signal() == 0) return;
  std::error_code ec;
  std::filesystem::remove(marker_path(run_path_, MarkerKind::preempted), ec);
}

}  // namespace ts
