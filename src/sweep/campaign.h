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
  // The keys the sweep varies (matrix keys, zip groups' keys, then keys only `include` names),
  // read from the campaign's sweep.yaml copy; empty when it is missing or unreadable.
  std::vector<std::string> swept_keys;
};

// How a person recognises a run: "<run_id> (lr=0.1 workers=2)", its swept keys' values from
// its config ("<run_id>" alone when nothing is swept).
std::string run_label(const Campaign& campaign, const ManifestRun& run);

// Loads CAMPAIGN_DIR: ConfigError when the manifest is missing, unreadable, or its hash differs
// from manifest.hash (the campaign was edited after it was frozen). Every entry's ids are
// recomputed from its config, not trusted (docs/sweeps.md "Ids and seeds"): a run_id other than
// <config_id>-r<repetition>, a config_id that is not the hash of the entry's config (with the
// manifest's base_seed where the seed was derived), and two entries of one run_id are refused
// naming the entry, also when manifest.hash was recomputed to match the edit.
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
// file ("run file missing behind DONE (runs/x.h5)", "... unreadable ...", "... incomplete ...",
// "run file of another run behind DONE (...)": its root run_id or config_id is not `run`'s, a
// file copied or moved over this run's name) when there is a marker but the file is not this
// run's complete result; "" otherwise.
struct DoneCheck {
  std::optional<RunMarker> marker;
  std::string problem;
  bool file_missing = false;  // no run file behind the marker (deleted): the run is missing, not failed
  bool valid() const { return marker.has_value() && problem.empty(); }
};
DoneCheck check_done(const RunFiles& files, const ManifestRun& run);

// The fields of /proc/<pid>/stat after the command name, fields[0] being field 3 (the state);
// empty when there is no such process or /proc does not say.
std::vector<std::string> process_stat_fields(long pid);
// A process of this host that exists and is not a zombie (an init that does not reap, as in
// some containers, keeps dead ranks as zombies).
bool process_alive(long pid);
// When process `pid` of this host started, in clock ticks since boot (/proc/PID/stat field 22);
// nullopt when there is no such process or /proc does not say.
std::optional<long long> process_start_ticks(long pid);
// Is the attempt a RUNNING marker of this host names alive? Its pid must be a live process
// (process_alive) that is the attempt's: one that started when the marker's pid_start says, or,
// for a marker without pid_start (an earlier version's, or one written by hand), a trainscale
// process. A pid the kernel has since given to another process (pid reuse; `pid: 1` is init) is
// no attempt: the marker is stale and the task does not count as running.
bool attempt_alive(const RunMarker& running);

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
  int64_t not_submitted = 0;  // of the missing runs, those no recorded submission holds
  std::vector<RunStatus> runs;  // manifest order
  std::vector<std::string> notes;  // e.g. "squeue not found: pending not asked from Slurm"
};

// What a scheduler says about one manifest index: state "running" | "pending" | "ended" (Slurm
// answered and no longer lists the task's job) | "not submitted" (no recorded submission holds
// the index: it counts as missing, said so), and for pending tasks why they wait (Slurm's
// reason code such as Priority, Resources or JobHeldUser; PBS's comment), "" when it gives none.
// `pack`: the indices of a packed array task (sweep submit --pack), lane after lane; empty for a
// task of one run. A task whose runs go side by side has `lanes` > 1, and `lane` holds the
// indices of this run's lane, in the order it runs them (one after another).
struct SchedulerTask {
  std::string state;
  std::string reason;
  std::vector<int64_t> pack;
  int lanes = 1;
  std::vector<int64_t> lane = {};
};
using SchedulerStates = std::map<int64_t, SchedulerTask>;

// Classifies every run, first match wins: a DONE marker whose run file is complete ->
// done/diverged; an UNSUPPORTED marker (what this build, machine or GPU generation cannot run,
// found at expand or at run time) -> unsupported, with its reason; in a packed task that the
// scheduler runs, the runs of a lane (the task's runs, or each lane of a task whose runs go side
// by side) run one after another: the lane's current run (the first with a
// RUNNING marker, else the first that is neither done, unsupported nor failed) is running, the
// runs after it are pending ("waiting in its packed array task"), the runs before it are
// classified by their markers alone; the scheduler says running, or
// a RUNNING marker of a live attempt (on another host: trusted, unless the scheduler holds the
// task queued, a requeued task, or says its job ended) -> running; the
// scheduler says pending -> pending (with its reason); a
// PREEMPTED marker -> preempted; a DONE marker whose run file was deleted -> missing (saying so,
// as the analysis does); one whose run file is unreadable, incomplete or another run's -> failed
// (saying so); a RUNNING marker of a dead process on this host -> failed;
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
