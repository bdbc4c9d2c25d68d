// The task runner's claim on a campaign task (see task_claim.h).
#include "sweep/task_claim.h"

#include <filesystem>

namespace ts {

TaskClaim claim_task(const std::string& campaign_dir, const ManifestRun& run) {
  namespace fs = std::filesystem;
  const RunFiles files = run_files(campaign_dir, run.run_id);
  std::error_code ec;
  fs::create_directories(fs::path(files.lock).parent_path(), ec);
  TaskClaim claim;
  claim.lock = FileLock::try_lock(files.lock);
  if (claim.lock.result() == FileLock::Result::held) {
    claim.verdict = TaskClaim::Verdict::held;
    return claim;
  }
  if (claim.lock.result() == FileLock::Result::unsupported)
    claim.note = "lock: " + files.lock + " cannot be locked (" + claim.lock.note() +
                 "); running without a lock: this file system does not guard against a second submission";
  const DoneCheck done = check_done(files, run);
  if (done.valid()) {
    claim.verdict = TaskClaim::Verdict::done;
    return claim;
  }
  if (done.marker) {  // a DONE marker without a complete result behind it
    std::string what = done.problem;
    if (fs::exists(files.run_file, ec)) {
      fs::rename(files.run_file, files.run_file + ".invalid", ec);
      what += ec ? "; could not move it aside: " + ec.message() : "; moved to " + files.run_file + ".invalid";
    }
    fs::remove(files.done, ec);
    claim.note += (claim.note.empty() ? "" : "\n") + std::string("stale DONE removed: ") + what;
  }
  return claim;
}

}  // namespace ts
