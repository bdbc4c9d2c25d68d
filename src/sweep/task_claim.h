// The task runner's claim on one campaign task before an attempt starts (docs/sweeps.md
// "Locks"): rank 0 takes `runs/<run_id>.lock` (core/file_lock.h) and holds it for the whole
// attempt, so two submissions of one campaign — local executors, Slurm or PBS arrays, or a mix
// — never run a task twice; under the lock it checks DONE again (another process may have just
// finished the task). A DONE marker whose run file is missing or broken is not a result: the
// claim removes the marker and moves a broken file aside to `runs/<run_id>.h5.invalid`, and the
// task runs again.
#pragma once

#include <string>

#include "core/file_lock.h"
#include "sweep/campaign.h"

namespace ts {

struct TaskClaim {
  enum class Verdict {
    run,   // this process runs the attempt (holding the lock, or on a file system without flock)
    done,  // a complete result exists: nothing to do
    held,  // another process holds the lock: it runs the task now
  };
  Verdict verdict = Verdict::run;
  FileLock lock;
  std::string note;  // one line for the attempt log ("" when there is nothing to say)
};

TaskClaim claim_task(const std::string& campaign_dir, const ManifestRun& run);

}  // namespace ts
