// A frozen campaign directory (docs/sweeps.md "Campaign directory"): the manifest read back
// and checked against its hash, the paths of every run's files and markers, and the state of
// each run (done / diverged / failed / preempted / running / pending / missing) for `sweep
// status`. A DONE marker counts only when its run file is complete (metrics/run_file_check.h).
//
//   CAMPAIGN_DIR/manifest.yaml, manifest.hash, sweep.yaml, site.yaml
//   runs/<run_id>.h5          the run file (written by the trainer, temp name + rename)
//   runs/<run_id>.DONE        markers (core/run_marker.h): status ok|diverged, attempt, ...
//   runs/<run_id>.FAILED      the reason of the last failed attempt, attempt, log
//   runs/<run_id>.PREEMPTED   a signal stopped the attempt after a checkpoint (resumable)
//   runs/<run_id>.RUNNING     host, pid, attempt of an attempt in progress
//   runs/<run_id>.lock        flock(2)ed by the task runner for the whole attempt
//   logs/<run_id>.attempt<N>.log   one log per attempt
//   jobs/                     array scripts, index files, submissions.yaml
#pragma once

#include <cstdint>
#include <map>
#include <optional>
#include <string>
#include <vector>

#include "core/run_marker.h"
#include "sweep/site.h"

namespace ts {

struct ManifestRun {
  int64_t index = 0;
  std::string run_id;
  std::string config_id;
  int repetition = 0;
  std::string config_yaml;  // the resolved config as YAML text
  int line = 0;             // 1-based line of the entry in manifest.yaml
};

struct Campaign {
  std::string dir;
  std::string name;
  std::string manifest_path;
  std::string hash;            // manifest.hash content (checked against manifest.yaml)
  std::string resources_yaml;  // the `resources` mapping as YAML
  std::vector<ManifestRun> runs;
  bool has_site = false;       // site.yaml present (else the built-in local site)
  Site site;
};

// Loads CAMPAIGN_DIR: ConfigError when the manifest is missing, unreadable, or its hash differs
// from manifest.hash (the campaign was edited after it was frozen).
Campaign load_campaign(const std::string& dir);

struct RunFiles {
  std::string run_file, done, failed, running, preempted, lock, unsupported;
};
RunFiles run_files(const std::string& campaign_dir, const std::string& run_id);
std::string campaign_logs_dir(const std::string& campaign_dir);
std::string campaign_jobs_dir(const std::string& campaign_dir);
// logs/<run_id>.attempt<N>.log
std::string attempt_log_path(const std::string& campaign_dir, const std::string& run_id, int attempt);
// 1 + the number of attempt logs already there.
int next_attempt(const std::string& campaign_dir, const std::string& run_id);

// A DONE marker checked against the run file behind it. `problem` says what is wrong with the
// file ("run file missing behind DONE (runs/x.h5)", "... unreadable ...", "... incomplete ...")
// when there is a marker but the file is not a complete result; "" otherwise.
struct DoneCheck {
  std::optional<RunMarker> marker;
  std::string problem;
  bool valid() const { return marker.has_value() && problem.empty(); }
};
DoneCheck check_done(const RunFiles& files);

// A process of this host that exists and is not a zombie (an init that does not reap, as in
// some containers, keeps dead ranks as zombies): is a RUNNING marker's attempt alive?
bool process_alive(long pid);

enum class RunState { done, diverged, failed, preempted, running, pending, missing, unsupported };
const char* run_state_name(RunState s);

struct RunStatus {
  int64_t index = 0;
  std::string run_id;
  RunState state = RunState::missing;
  // failed: the reason (core/run_marker.h failure_summary, or what is wrong behind DONE);
  // preempted: the marker's reason with attempt and log; running: where; pending: the
  // scheduler's reason (squeue %r, qstat comment) where it gives one; else "".
  std::string reason;
};

struct CampaignStatus {
  int64_t total = 0, done = 0, diverged = 0, failed = 0, preempted = 0, running = 0, pending = 0, missing = 0,
          unsupported = 0;
  std::vector<RunStatus> runs;  // manifest order
  std::vector<std::string> notes;  // e.g. "squeue not found: pending not asked from Slurm"
};

// What a scheduler says about one manifest index: state "running" | "pending" | "ended" (Slurm
// answered and no longer lists the task's job), and for pending tasks why they wait (Slurm's
// reason code such as Priority, Resources or JobHeldUser; PBS's comment), "" when it gives none.
struct SchedulerTask {
  std::string state;
  std::string reason;
};
using SchedulerStates = std::map<int64_t, SchedulerTask>;

// Classifies every run, first match wins: a DONE marker whose run file is complete ->
// done/diverged; an UNSUPPORTED marker (what this build, machine or GPU generation cannot run,
// found at expand or at run time) -> unsupported, with its reason; the scheduler says running, or
// a RUNNING marker of a live attempt (on another host: trusted, unless the scheduler holds the
// task queued, a requeued task, or says its job ended) -> running; the
// scheduler says pending -> pending (with its reason); a
// PREEMPTED marker -> preempted; a DONE marker whose run file is missing, unreadable or
// incomplete -> failed (saying so); a RUNNING marker of a dead process on this host -> failed;
// a FAILED marker -> failed (its text is the reason); else missing.
CampaignStatus campaign_status(const Campaign& campaign, const SchedulerStates& scheduler);
// One run's state by the same rule.
RunStatus run_status(const Campaign& campaign, const ManifestRun& run, const SchedulerStates& scheduler);

// "text": the counts, one line per failed and preempted run, running runs, pending and
// unsupported runs by reason (one line each) and notes. "json": one object with exactly the keys
// total, done, diverged, failed, preempted, running, pending, pending_reasons, missing,
// unsupported: failed, preempted and unsupported are lists of {index, run_id, reason},
// pending_reasons a list of {index, run_id, reason} for every pending run, the others counts.
std::string status_text(const Campaign& campaign, const CampaignStatus& status);
std::string status_json(const CampaignStatus& status);

}  // namespace ts
