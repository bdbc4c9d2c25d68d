// `trainscale run`: one configuration, one HDF5 run file; or one run of a frozen campaign
// (--manifest DIR --index I, docs/sweeps.md "Tasks"): idempotent, one log per attempt, and
// a DONE or FAILED marker at the end.
#include <boost/program_options.hpp>

#include <algorithm>
#include <filesystem>
#include <fstream>
#include <iostream>
#include <memory>
#include <optional>
#include <sstream>
#include <streambuf>

#include <unistd.h>

#include "app/command_options.h"
#include "app/command_errors.h"
#include "app/commands.h"
#include "core/error.h"
#include "core/file_lock.h"
#include "dist/communicator.h"
#include "config/config_id.h"
#include "config/run_config.h"
#include "core/host_info.h"
#include "core/names.h"
#include "core/preemption_signal.h"
#include "core/run_marker.h"
#include "core/strings.h"
#include "core/timer.h"
#include "data/blob_url.h"
#include "data/storage.h"
#include "sweep/campaign.h"
#include "sweep/site.h"
#include "sweep/task_claim.h"
#include "train/startup_stop.h"
#include "train/trainer.h"

namespace po = boost::program_options;

namespace ts {
namespace {

namespace fs = std::filesystem;

// Writes to two streams (the console and the attempt log).
class TeeBuf : public std::streambuf {
 public:
  TeeBuf(std::streambuf* a, std::streambuf* b) : a_(a), b_(b) {}

 protected:
  int overflow(int c) override {
    if (c == EOF) return !EOF;
    const int ra = a_->sputc(static_cast<char>(c)), rb = b_->sputc(static_cast<char>(c));
    return ra == EOF || rb == EOF ? EOF : c;
  }
  std::streamsize xsputn(const char* s, std::streamsize n) override {
    a_->sputn(s, n);
    return b_->sputn(s, n);
  }
  int sync() override { return (a_->pubsync() == 0 && b_->pubsync() == 0) ? 0 : -1; }

 private:
  std::streambuf* a_;
  std::streambuf* b_;
};

// A start-up stopped with something to resume (train/startup_stop.h): the other ranks may wait
// in a collective for this one, so under MPI the job ends here with exit 4, once this rank's
// records are written. A stop at a step boundary reaches every rank alike: they exit by themselves.
void end_stopped_startup_collectively(Communicator& comm, const std::exception& e) {
  if (comm.size() == 1 || dynamic_cast<const StartupPreemptedError*>(&e) == nullptr) return;
  print_rank_error("trainscale run", comm.rank(), comm.host(), std::string("preempted: ") + e.what());
  comm.abort_all(kExitPreempted);
}

// Runs single-rank on errors of other ranks: report and take the whole job down. A preemption
// is no error: every rank stops at the same step (train/step_boundary.h) and exits with 4.
int fail_collectively(Communicator& comm, const std::exception& e) {
  if (dynamic_cast<const PreemptedError*>(&e)) {
    end_stopped_startup_collectively(comm, e);
    return kExitPreempted;
  }
  if (comm.size() > 1 && dynamic_cast<const ConfigError*>(&e) == nullptr) {
    const bool known = dynamic_cast<const RuntimeError*>(&e) != nullptr;
    const std::string text = known ? std::string(e.what()) : unexpected_error_text(e);
    print_rank_error("trainscale run", comm.rank(), comm.host(), terminal_safe(text));
    comm.abort_all(kExitFailed);
  }
  return dynamic_cast<const ConfigError*>(&e) ? kExitUsage : kExitFailed;
}

// Rank 0's side of one attempt of a campaign run: its log, the RUNNING marker while it runs,
// and DONE or FAILED at the end (core/run_marker.h).
class Attempt {
 public:
  Attempt(const std::string& dir, const ManifestRun& run, const Campaign& campaign, int world_size)
      : dir_(dir), run_(run), files_(run_files(dir, run.run_id)) {
    std::error_code ec;
    fs::create_directories(campaign_logs_dir(dir), ec);
    fs::create_directories(fs::path(dir) / "runs", ec);
    number_ = next_attempt(dir, run.run_id);
    const std::string log_path = attempt_log_path(dir, run.run_id, number_);
    log_.open(log_path);
    if (!log_) throw RuntimeError(log_path + ": cannot write the attempt log");
    fs::remove(files_.failed, ec);  // a stale reason from an earlier attempt
    fs::remove(files_.unsupported, ec);
    RunMarker running = stamped();
    running.pid = ::getpid();
    running.pid_start = process_start_ticks(running.pid).value_or(0);  // tells this process from a later one of its pid
    running.start = utc_timestamp();
    write_marker(files_.running, running);
    log_ << "trainscale run --manifest " << dir << " --index " << run.index << "\nrun_id: " << run.run_id
         << "\nconfig_id: " << run.config_id << "\ncampaign: " << campaign.name << "\nattempt: " << number_
         << "\nhost: " << host_name() << "\nworld_size: " << world_size << "\nstart: " << utc_timestamp() << "\n";
    log_.flush();
  }
  std::ostream& log() { return log_; }
  int number() const { return number_; }

  // The trainer wrote the PREEMPTED marker (with the checkpoint); the attempt ends here.
  void preempted(const PreemptedError& e) { end("preempted", e.what()); }

  // What this build or machine cannot run (UnsupportedError): the UNSUPPORTED marker, not failed.
  void unsupported(const std::string& reason) { end_with_marker(files_.unsupported, "unsupported", reason); }

  void finished(int exit_code, double stage_in_s) {
    RunMarker done = stamped();
    done.status = exit_code == kExitDiverged ? "diverged" : "ok";
    done.run_file = run_.run_id + ".h5";
    done.stage_in_s = stage_in_s;
    done.end = utc_timestamp();
    write_marker(files_.done, done);
    end(exit_code == kExitDiverged ? "diverged" : "done", "");
  }

  // Never throws: a FAILED marker that cannot be written (the disk is full) is reported beside
  // the first error, which stays the one that reaches main.
  void failed(const std::exception& e) noexcept {
    std::string reason = dynamic_cast<const ConfigError*>(&e)    ? "configuration error: " + std::string(e.what())
                         : dynamic_cast<const RuntimeError*>(&e) ? std::string(e.what())
                                                                 : unexpected_error_text(e);
    failed(reason);
  }
  void failed(std::string reason) noexcept {
    std::replace(reason.begin(), reason.end(), '\n', ' ');
    try {
      end_with_marker(files_.failed, "failed", reason);  // replaces the trainer's marker of the same failure
    } catch (const std::exception& marker_error) {
      std::cerr << "trainscale run: the FAILED marker could not be written either: " << marker_error.what() << "\n";
    }
  }

 private:
  // The UNSUPPORTED or FAILED marker (the reason, this attempt's log, the time), then the log's end.
  void end_with_marker(const std::string& marker_path, const std::string& result, const std::string& reason) {
    RunMarker marker = stamped();
    marker.reason = reason;
    marker.log = "logs/" + fs::path(attempt_log_path(dir_, run_.run_id, number_)).filename().string();
    marker.end = utc_timestamp();
    write_marker(marker_path, marker);
    end(result, reason);
  }

  RunMarker stamped() const {
    RunMarker m;
    m.attempt = number_;
    m.host = host_name();
    return m;
  }
  void end(const std::string& result, const std::string& reason) {
    log_ << "end: " << utc_timestamp() << "\nresult: " << result << "\n";
    if (!reason.empty()) log_ << "reason: " << reason << "\n";
    log_.flush();
    std::error_code ec;
    fs::remove(files_.running, ec);
  }

  std::string dir_;
  ManifestRun run_;
  RunFiles files_;
  int number_ = 0;
  std::ofstream log_;
};

// Maps the run's storage name through the campaign's site (rank 0 stages the data in, the
// others only compute the path) and points the typed config at the physical directory; returns
// the staging time. The run file keeps the manifest's config (logical root and storage name).
// When staging fails, rank 0 throws (and reports) and the other ranks get nullopt.
std::optional<double> stage_in(const Campaign& campaign, const std::string& run_id, ResolvedConfig& cfg,
                               Communicator& comm, std::ostream& log) {
  double ok = 1.0;
  StagedData staged;
  std::string error;
  if (comm.rank() == 0) {
    try {
      staged = stage_dataset(campaign.site, cfg.run.dataset.storage, cfg.run.dataset.root);
      log << "data: " << staged.note << "\nstage_in_s: " << staged.seconds << "\n";
      log.flush();
    } catch (const StoppedDuringStartup& stop) {  // the other ranks wait below: the caller ends the job
      end_stopped_startup(stop, (fs::path(campaign.dir) / "runs").string(), run_id, comm);
    } catch (const std::exception& e) {
      ok = 0.0;
      error = e.what();
    }
  }
  comm.broadcast(&ok, 1, 0);
  if (ok == 0.0) {
    if (comm.rank() == 0) throw RuntimeError(error);
    return std::nullopt;
  }
  if (comm.rank() != 0) staged = stage_dataset(campaign.site, cfg.run.dataset.storage, cfg.run.dataset.root, false);
  // A site storage named like a storage of this build reads through that storage: without a
  // path (`blob: {}`, `nfs: {}`) dataset.root as written, and `blob` also under the URL prefix
  // its path gives (`blob: {path: "https://host/datasets"}`: <path>/<last part of the root>).
  // Any other is a local path by now.
  const auto names = storage_names();
  const bool named = std::find(names.begin(), names.end(), cfg.run.dataset.storage) != names.end();
  const bool under_url = cfg.run.dataset.storage == "blob" && is_blob_url(staged.root);
  const bool through_storage = named && (staged.root == cfg.run.dataset.root || under_url);
  cfg.run.dataset.root = staged.root;
  if (cfg.run.dataset.stage_dir.empty()) cfg.run.dataset.stage_dir = campaign.site.scratch;  // dataset.stage
  // local and nfs stay as they are (an nfs mount is checked and recorded); blob only when it
  // still reads dataset.root through the network.
  const bool posix_name = cfg.run.dataset.storage == "local" || cfg.run.dataset.storage == "nfs";
  if (!through_storage && !posix_name) cfg.run.dataset.storage = "local";
  return staged.seconds;
}

// Rank 0 claims the task (sweep/task_claim.h) and every rank learns whether to run it: nullopt
// to run (rank 0 then holds the claim in `claim`), else the exit code of a skipped task.
std::optional<int> claim_for_all(const std::string& dir, const ManifestRun& run, Communicator& comm,
                                 std::optional<TaskClaim>& claim) {
  double verdict = 0.0;
  if (comm.rank() == 0) {
    claim = claim_task(dir, run);
    verdict = static_cast<double>(claim->verdict);
  }
  comm.broadcast(&verdict, 1, 0);
  const auto v = static_cast<TaskClaim::Verdict>(static_cast<int>(verdict));
  if (v == TaskClaim::Verdict::run) return std::nullopt;
  if (comm.rank() == 0)
    std::cout << "run " << run.run_id << " (index " << run.index << "): "
              << (v == TaskClaim::Verdict::done ? "already done; skipped"
                                                : "skipped: another process holds " + claim->lock.path() + " (it runs the task now)")
              << "\n";
  return kExitOk;
}


// A watchdog timeout (Communicator::arm_watchdog) ends the attempt as failed: rank 0 records it
// as any failure (FAILED marker with the attempt and its log, the log's end); another rank
// writes the FAILED marker itself when rank 0 is not known to be answering (it may be the rank
// that stopped).
void record_timeouts_of(Attempt* attempt, const std::string& failed_marker, Communicator& comm) {
  comm.set_timeout_report([attempt, failed_marker](const ExchangeTimeout& timeout) {
    if (attempt) {
      attempt->failed(timeout.reason);
      return;
    }
    if (timeout.rank0_answering) return;
    RunMarker marker;
    marker.reason = timeout.reason;
    marker.host = host_name();
    marker.end = utc_timestamp();
    write_marker(failed_marker, marker);
  });
}

int run_manifest_entry(const std::string& dir, int64_t index, int restart_count) {
  // Everything that can be refused is checked before MPI starts.
  const Campaign campaign = load_campaign(dir);  // refuses a manifest whose hash changed
  if (index < 0 || index >= static_cast<int64_t>(campaign.runs.size()))
    throw ConfigError("--index " + std::to_string(index) + ": " + campaign.manifest_path + " has runs 0.." +
                      std::to_string(campaign.runs.size() - 1));
  const ManifestRun& run = campaign.runs[index];
  if (check_done(run_files(dir, run.run_id), run).valid()) {
    std::cout << "run " << run.run_id << " (index " << index << "): already done (" << run_files(dir, run.run_id).done
              << "); skipped\n";
    return kExitOk;
  }
  MpiSession mpi(nullptr, nullptr);
  install_preemption_handlers();  // after MPI's own: SIGTERM / SIGUSR1 stop at a step boundary
  auto comm = Communicator::world();
  const bool root = comm->rank() == 0;
  std::optional<TaskClaim> claim;  // rank 0 holds the task's lock until the attempt ends
  if (const std::optional<int> skipped = claim_for_all(dir, run, *comm, claim)) return mpi.set_exit_code(*skipped);
  std::unique_ptr<Attempt> attempt;
  std::ostringstream discard;
  try {
    // Inside the try: an attempt that cannot start (a full campaign directory) ends every rank.
    if (root) {
      attempt = std::make_unique<Attempt>(dir, run, campaign, comm->size());
      attempt->log() << "scheduler_restarts: " << restart_count << "\n";
      if (!claim->note.empty()) attempt->log() << claim->note << "\n";
    }
    TeeBuf tee(std::cout.rdbuf(), root ? attempt->log().rdbuf() : discard.rdbuf());
    std::ostream log(&tee);
    record_timeouts_of(attempt.get(), run_files(dir, run.run_id).failed, *comm);
    // Line numbers in messages are the manifest's (campaign.h).
    ResolvedConfig cfg = parse_run_config(run.config_yaml, campaign.manifest_path, {});
    const std::optional<double> stage_in_s = stage_in(campaign, run.run_id, cfg, *comm, root ? attempt->log() : discard);
    if (!stage_in_s) return mpi.set_exit_code(kExitFailed);  // rank 0 reports it
    RunIdentity id{run.run_id, run.config_id, campaign.name, root ? attempt->number() : 0};
    const std::string runs_dir = (fs::path(dir) / "runs").string();
    // A task continues from its checkpoint by itself (a requeued or resubmitted task).
    RunOutcome out = train(cfg, id, runs_dir, *comm, root ? log : static_cast<std::ostream&>(discard),
                           ResumeMode::automatic);
    if (root) attempt->finished(out.exit_code, *stage_in_s);
    return mpi.set_exit_code(out.exit_code);
  } catch (const PreemptedError& e) {
    if (root) attempt->preempted(e);
    end_stopped_startup_collectively(*comm, e);
    if (root) throw;
    return mpi.set_exit_code(kExitPreempted);
  } catch (const UnsupportedError& e) {  // every rank refused alike (refuse_collectively)
    if (root) {
      attempt->unsupported(e.what());
      std::cout << "run " << run.run_id << " (index " << index << "): unsupported here: " << e.what() << "\n";
    }
    return kExitOk;
  } catch (const std::exception& e) {
    if (attempt) attempt->failed(e);
    const int rc = fail_collectively(*comm, e);
    if (root) throw;
    return mpi.set_exit_code(rc);
  }
}

// `run --config` names its file by the config (<out>/<run_id>.h5), so running a config again into
// the same --out would silently replace the first result: refused unless asked for (--overwrite)
// or continuing it (--resume). Checked before MPI starts, by every rank alike.
void refuse_to_overwrite(const std::string& out_dir, const std::string& run_id, bool resume, bool overwrite) {
  const fs::path run_file = fs::path(out_dir) / (run_id + ".h5");
  std::error_code ec;
  if (resume || overwrite || !fs::exists(run_file, ec)) return;
  throw ConfigError("--out " + out_dir + " already holds the run file of this config (" + run_file.string() +
                    ", from an earlier run): pass --overwrite to replace it, another --out to keep both, or --resume "
                    "to continue it");
}

// Two `run --config`s of one config into one --out would write one run file, its checkpoints and
// markers at once (the second, started while the first ran, found no file to refuse): rank 0
// holds <out>/<run_id>.lock (core/file_lock.h, released when the process ends, kill -9 included)
// from here to the end, and a run that finds it held is refused on every rank (exit 2, no
// marker, nothing touched). Under the lock the finished run file is checked again: a first run
// may have ended since refuse_to_overwrite looked. An --out that cannot be created or written is
// left to the trainer to report; a file system without flock runs unguarded, with a note.
std::optional<FileLock> lock_out_dir(const std::string& out_dir, const std::string& run_id, bool resume, bool overwrite,
                                     Communicator& comm) {
  std::optional<FileLock> lock;
  std::string refusal;
  if (comm.rank() == 0) {
    const std::string path = (fs::path(out_dir) / (run_id + ".lock")).string();
    std::error_code ec;
    fs::create_directories(out_dir, ec);
    try {
      if (!ec) lock = FileLock::try_lock(path);
    } catch (const RuntimeError&) {  // not writable: the trainer's check names --out
    }
    if (lock && lock->result() == FileLock::Result::held) {
      refusal = "another trainscale run is writing run " + run_id + " into --out " + out_dir + " now (it holds " + path +
                "); wait for it to end, or use another --out";
    } else if (lock && lock->result() == FileLock::Result::unsupported) {
      std::cerr << "trainscale run: note: " << path << " cannot be locked (" << lock->note()
                << "); two runs of this config into --out " << out_dir << " are not kept apart here\n";
    }
    if (refusal.empty()) try {
        refuse_to_overwrite(out_dir, run_id, resume, overwrite);
      } catch (const ConfigError& e) {
        refusal = e.what();
      }
  }
  double ok = refusal.empty() ? 1.0 : 0.0;
  comm.broadcast(&ok, 1, 0);
  if (ok == 0.0) throw ConfigError(comm.rank() == 0 ? refusal : "rank 0 refused --out " + out_dir);
  return lock;
}

}  // namespace

int command_run(const std::vector<std::string>& args) {
  po::options_description opts(
      "usage: trainscale run --config FILE.yaml [--set key=value ...] [--out DIR]\n"
      "       trainscale run --config FILE.yaml [--set ...] [--out DIR] --resume\n"
      "       trainscale run --manifest CAMPAIGN_DIR --index I\n\n"
      "Trains one run configuration (keys: docs/config.md) and writes <out>/<run_id>.h5 (schema\n"
      "trainscale-run/1, docs/hdf5-schema.md); run_id = <config file stem>-<config_id> (the stem\n"
      "must be a name: letters, digits and . _ + -, docs/sweeps.md \"Names\").\n"
      "With --manifest: run I of a campaign frozen by `trainscale sweep expand` (docs/sweeps.md).\n"
      "It refuses a manifest whose hash changed, skips a run that has a DONE marker and a complete\n"
      "run file, and skips (exit 0) a run whose runs/<run_id>.lock another process holds; it holds\n"
      "that lock for the attempt, logs it to CAMPAIGN_DIR/logs/<run_id>.attempt<N>.log and ends\n"
      "with runs/<run_id>.DONE (status ok or diverged) or runs/<run_id>.FAILED (the reason); a task\n"
      "continues from its checkpoint by itself.\n"
      "Under MPI (mpirun -np N trainscale run ...) N must equal the config's `workers`; a rank that\n"
      "waits longer than dist.timeout_s for the others (one died or stopped) ends the job (exit 1).\n"
      "A run that cannot fit in the memory a rank may use (cgroup, ulimit, Slurm, MemAvailable,\n"
      "TRAINSCALE_MEMORY_LIMIT) is refused before it allocates (exit 2; docs/reliability.md).\n"
      "Checkpoints (checkpoint.every_steps / every_minutes) go to <out>/<run_id>.checkpoint.<step>.hdf5\n"
      "(with a .rank-<r>.hdf5 part per rank where the ranks hold models or error-feedback memory of their own);\n"
      "SIGTERM or SIGUSR1 stops every rank at the next step with a checkpoint and <run_id>.PREEMPTED\n"
      "(exit code 4; before the first step it stops at once: exit 4 where a checkpoint is there to\n"
      "resume, else 1); --resume continues from the newest valid checkpoint, bit-identical to an\n"
      "uninterrupted run (docs/reliability.md; backend cuda needs cuda.algorithms: deterministic).\n"
      "The log ends with the final parameters' SHA-256 (params_sha256: ..., as in the run file).\n"
      "Heterogeneous workers: dist.partition static (dist.shares: [96, 32]), measured or adaptive gives\n"
      "the ranks unequal shares of global_batch, their gradients weighted by share; dist.emulate_slowdown\n"
      "(testing) slows one rank down; /partition records shares, compute and idle time per step and rank\n"
      "(docs/heterogeneous.md).\n"
      "Warnings (rank 0 prints each once, as 'warning: ...', and the run file keeps them in its `warnings`\n"
      "attribute): a node whose ranks run more compute threads than the CPUs they may use, an LR warm-up\n"
      "longer than the run, a logged loss above 10x the first step's (exploded) or unchanged over 6\n"
      "progress lines (stalled); diverge.loss_above_factor: F ends a run whose loss passes F x the first\n"
      "as diverged (docs/reliability.md \"Warnings\").\n"
      "Under mpirun every rank reads the config; a configuration error is printed by rank 0 only.\n"
      "A run holds <out>/<run_id>.lock while it runs: a second run of the config into that --out is\n"
      "refused (exit 2), as is one that would replace its finished run file without --overwrite.\n"
      "Exit codes: 0 ok, 1 runtime failure, 2 usage/config error, 3 diverged (NaN/Inf loss, or a loss\n"
      "above diverge.loss_above_factor), 4 preempted.\n\noptions");
  opts.add_options()("help,h", "show this help")
      ("config", po::value<std::string>(), "run config YAML file")
      ("set", po::value<std::vector<std::string>>()->composing(),
       "override a key: --set dist.allreduce=mpi (repeatable); a list as --set dist.shares=96,32 or "
       "--set 'dist.shares=[96, 32]'; --set ~KEY removes a key")
      ("out", po::value<std::string>()->default_value("runs"), "directory for the run file")
      ("resume", "continue from the newest valid checkpoint in --out (none: start at step 0, with a note)")
      ("overwrite", "replace the run file an earlier run of this config left in --out (refused otherwise)")
      ("manifest", po::value<std::string>(), "campaign directory (sweep runs)")
      ("index", po::value<int64_t>(), "manifest index (sweep runs)")
      ("restart-count", po::value<int>()->default_value(0),
       "sweep runs: how often the scheduler restarted this task (Slurm job scripts pass SLURM_RESTART_COUNT); "
       "recorded in the attempt log");
  const std::optional<po::variables_map> parsed = parse_command_options(args, opts);
  if (!parsed) return kExitOk;
  const po::variables_map& vm = *parsed;
  if (vm.count("manifest") || vm.count("index")) {
    if (!vm.count("manifest") || !vm.count("index"))
      throw ConfigError("--manifest CAMPAIGN_DIR and --index I go together (see trainscale run --help)");
    if (vm.count("config") || vm.count("set"))
      throw ConfigError("--manifest runs take their config from the manifest; drop --config/--set");
    if (vm.count("resume"))
      throw ConfigError("--resume: --manifest runs continue from their checkpoint by themselves; drop --resume");
    return run_manifest_entry(vm["manifest"].as<std::string>(), vm["index"].as<int64_t>(), vm["restart-count"].as<int>());
  }
  if (!vm.count("config")) throw ConfigError("--config FILE.yaml is required (see trainscale run --help)");
  const std::string path = vm["config"].as<std::string>();

  // Parse before MPI starts: a config error costs no MPI start-up and is reported once.
  ResolvedConfig cfg = load_run_config(path, option_strings(vm, "set"));
  RunIdentity id;
  id.config_id = config_id_of(cfg.yaml);
  // The run id names the run file: the config file's stem must be a valid name (core/names.h).
  const std::string stem = std::filesystem::path(path).stem().string();
  check_name(stem, "run id prefix (the config file's name without its extension; rename the file)", "--config " + path, "");
  id.run_id = stem + "-" + id.config_id;
  refuse_to_overwrite(vm["out"].as<std::string>(), id.run_id, vm.count("resume") > 0, vm.count("overwrite") > 0);

  MpiSession mpi(nullptr, nullptr);
  install_preemption_handlers();  // after MPI's own: SIGTERM / SIGUSR1 stop at a step boundary
  auto comm = Communicator::world();
  try {
    const std::optional<FileLock> out_lock =
        lock_out_dir(vm["out"].as<std::string>(), id.run_id, vm.count("resume") > 0, vm.count("overwrite") > 0, *comm);
    std::ostringstream discard;
    RunOutcome out = train(cfg, id, vm["out"].as<std::string>(), *comm, comm->rank() == 0 ? std::cout : discard,
                           vm.count("resume") ? ResumeMode::requested : ResumeMode::off);
    return mpi.set_exit_code(out.exit_code);
  } catch (const std::exception& e) {
    const int rc = fail_collectively(*comm, e);
    if (comm->rank() != 0) return mpi.set_exit_code(rc);
    throw;
  }
}

}  // namespace ts
