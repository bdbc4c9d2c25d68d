// A run as a sequence of named phases (see trainer.h): check, resume point, set up (and the
// checkpoint's state put back), loop, gather, write; or the stop of a preemption.
#include "train/trainer.h"

#include <unistd.h>

#include <cstdlib>
#include <filesystem>
#include <fstream>
#include <new>
#include <optional>
#include <ostream>

#include "core/error.h"
#include "core/float_environment.h"
#include "core/file_io.h"
#include "core/host_info.h"
#include "core/marker_reserve.h"
#include "core/memory_limits.h"
#include "core/preemption_signal.h"
#include "core/run_marker.h"
#include "core/timer.h"
#include "metrics/mllog.h"
#include "metrics/run_file_view.h"
#include "train/capabilities.h"
#include "train/checkpoint.h"
#include "train/checkpoint_state.h"
#include "train/loop.h"
#include "train/phase_options.h"
#include "train/progress.h"
#include "train/ps_server_loop.h"
#include "train/resources.h"
#include "train/resume.h"
#include "train/run_output.h"
#include "train/run_setup.h"
#include "train/preemption_notice.h"
#include "train/startup_stop.h"

namespace ts {
namespace {

void prepare_out_dir(const std::string& out_dir) {
  std::error_code ec;
  std::filesystem::create_directories(out_dir, ec);
  if (ec)
    throw ConfigError("--out " + out_dir + ": cannot create the output directory (" + ec.message() +
                      "); choose a writable directory");
  const std::string probe = out_dir + "/.write-probe-" + std::to_string(::getpid());
  std::ofstream f(probe);
  if (!f) throw ConfigError("--out " + out_dir + ": the output directory is not writable; choose another with --out");
  f.close();
  std::filesystem::remove(probe, ec);
}

// checkpoint.* and --resume where this run cannot be restored exactly (train/checkpoint.h).
void check_checkpointing(const ResolvedConfig& cfg, ResumeMode resume) {
  const std::string why = checkpoint_refusal(cfg.run);
  if (why.empty()) return;
  const CheckpointConfig& c = cfg.run.checkpoint;
  if (c.enabled()) throw ConfigError(cfg.locate(c.every_steps > 0 ? "checkpoint.every_steps" : "checkpoint.every_minutes") + ": " + why);
  if (resume == ResumeMode::requested) throw ConfigError("--resume: " + why);
}

// Rank 0 looks for the checkpoint to continue from; every rank learns whether it may go on.
std::optional<Checkpoint> find_resume_point(const CheckpointTarget& target, ResumeMode resume, Communicator& comm,
                                            std::ostream& log) {
  std::optional<Checkpoint> ckpt;
  std::string refusal;
  if (comm.rank() == 0 && resume != ResumeMode::off) {
    try {
      ckpt = newest_valid_checkpoint(target, comm.size(), log);
    } catch (const ConfigError& e) {
      refusal = e.what();
    }
    if (refusal.empty() && !ckpt && resume == ResumeMode::requested)
      log << "note: --resume: no valid checkpoint of run " << target.run_id << " in " << target.out_dir
          << "; starting from step 0\n";
  } else if (comm.rank() == 0) {
    const auto existing = list_checkpoints(target.out_dir, target.run_id);
    if (!existing.empty())
      log << "note: " << existing.size() << " checkpoint(s) of this run exist (newest: step " << existing.front().first
          << "); this run starts from step 0 (--resume continues from a checkpoint)\n";
  }
  double ok = refusal.empty() ? 1 : 0;
  comm.broadcast(&ok, 1, 0);
  if (ok == 0) throw ConfigError(comm.rank() == 0 ? refusal : "rank 0 refused the checkpoint to resume from");
  return ckpt;
}

// The run file's `attempt` (trainer.h RunIdentity::attempt).
int attempt_number(const RunIdentity& id, const std::optional<Checkpoint>& ckpt) {
  if (id.attempt > 0) return id.attempt;
  if (const char* restarts = std::getenv("SLURM_RESTART_COUNT")) {
    char* end = nullptr;
    const long n = std::strtol(restarts, &end, 10);
    if (end != restarts && *end == '\0' && n >= 0 && n < 1000000) return static_cast<int>(n) + 1;
  }
  return ckpt ? static_cast<int>(ckpt->attempt) + 1 : 1;
}

// A preemption: rank 0 leaves the PREEMPTED marker; no rank exits before it is on disk (a
// launcher may kill the rest of the job when the first rank exits).
[[noreturn]] void stop_preempted(const RunRecording& rec, int attempt, const std::string& run_path,
                                 Communicator& comm, std::ostream& log) {
  const std::string signal = signal_name(rec.preempted_by);
  const std::string checkpoint = std::filesystem::path(rec.last_checkpoint).filename().string();
  const std::string what = signal + " after step " + std::to_string(rec.steps()) +
                           (checkpoint.empty() ? ", no checkpoint (this run cannot be checkpointed)"
                                               : "; checkpoint " + checkpoint + "; continue with trainscale run --resume");
  if (comm.rank() == 0) {
    RunMarker marker;
    marker.reason = "preempted by " + what;
    marker.signal = signal;
    marker.step = static_cast<long>(rec.steps());
    marker.checkpoint = checkpoint;
    marker.attempt = attempt;
    marker.host = host_name();
    marker.end = utc_timestamp();
    write_marker(marker_path(run_path, MarkerKind::preempted), marker);
    log << "preempted: " << what << "\n";
    log.flush();
  }
  comm.barrier();
  throw PreemptedError(what);
}

// `start_warnings`: what the checks before set-up warned of (rank 0's; train/resources.h).
RunOutcome train_checked(const ResolvedConfig& cfg, const RunIdentity& id, const std::string& out_dir,
                         const std::string& run_path, ResumeMode resume, Communicator& comm, std::ostream& log,
                         const std::vector<std::string>& start_warnings, Communicator* ps_world = nullptr) {
  const bool root = comm.rank() == 0;
  const std::string start_time = utc_timestamp();
  const double setup_start = unix_seconds();
  CheckpointTarget target{out_dir, id.run_id, id.config_id, 1};
  std::optional<Checkpoint> ckpt = find_resume_point(target, resume, comm, log);
  const ResumeState resumed = distribute_checkpoint(ckpt, comm);
  target.attempt = attempt_number(id, ckpt);
  const std::optional<ShareState> shares = share_state_of(resumed.mine, comm.size());
  // Each phase's own options, packed here once (train/phase_options.h): set-up never sees the config.
  const RunConfig& r = cfg.run;
  const DistConfig& d = r.dist;
  const SetupOptions options{.device = device_options_of(cfg),
                             .dataset = r.dataset,
                             .data = run_data_options_of(cfg),
                             .plan = plan_options_of(cfg),
                             .model = model_options_of(r),
                             .memory = memory_options_of(r),
                             .loop = loop_options_of(r, comm.rank()),
                             .shares = {d.heterogeneous(), d.partition, d.shares, d.calibration_steps,
                                        d.rebalance_steps, d.share_quantum},
                             .sgd = sgd_options_of(r),
                             .loss_scale = {r.effective_loss_scale(), r.loss_scale.init, r.loss_scale.growth_interval},
                             .lr = lr_options_of(r),
                             .shm = {d.shm_chunk_kb * 1024, static_cast<int>(d.shm_buffers)},
                             .exchange = exchange_options_of(r),
                             .hogwild_replicas = static_cast<int>(d.threads_per_worker),
                             .cuda_graphs = r.cuda_graphs,
                             .cuda_graphs_key = cfg.locate("cuda.graphs"),
                             .loss_reads = r.loss_reads,
                             .loss_reads_key = cfg.locate("loss_reads"),
                             .cuda_sync_phases = r.cuda_sync_phases,
                             .mixed_backends = r.mixed_backends()};
  std::unique_ptr<RunSetup> setup =
      set_up_run(options, comm, resumed.mine.loader_position, shares ? &*shares : nullptr, ps_world);
  RunRecording rec;
  rec.setup_start_wall = setup_start;
  apply_checkpoint(resumed, ckpt, *setup, rec, comm);
  if (root && ckpt)
    log << "resuming after step " << resumed.step << " from " << checkpoint_path(out_dir, id.run_id, resumed.step)
        << " (attempt " << target.attempt << ")\n";
  ckpt.reset();  // the parameters are on the device now
  rec.reserve(setup->plan.total_steps);
  if (root) log_run_start(log, id.run_id, cfg.run, *setup, comm.size());
  if (root) rec.warnings = setup->data->prepared.warnings;  // log_run_start printed them
  for (const std::string& warning : start_warnings) warn(log, rec, root, warning);
  const std::string warmup = warmup_warning(cfg, setup->plan, setup->lr->at(setup->plan.total_steps - 1));
  if (!warmup.empty()) warn(log, rec, root, warmup);
  const bool can_checkpoint = checkpoint_refusal(cfg.run).empty();
  end_startup_phase();  // a signal from here on stops the run at a step boundary
  PreemptionNotice notice(root, out_dir, id.run_id, run_path, target.attempt);
  rec.loop_start_wall = unix_seconds();
  run_loop(*setup, comm, log, rec, can_checkpoint ? &target : nullptr);
  notice.close();
  if (setup->outside_peers) setup->outside_peers->leave();
  if (rec.preempted_by != 0) stop_preempted(rec, target.attempt, run_path, comm, log);
  RunResult result = gather_recording(rec, *setup, cfg.run, comm);
  const int exit_code = rec.diverged ? kExitDiverged : kExitOk;
  if (!root) return {exit_code, ""};
  RunIdentity attempt_id = id;
  attempt_id.attempt = target.attempt;
  setup->note_device_memory(setup->backend->device_memory().used);
  write_run_output(result, rec, cfg, attempt_id, *setup, start_time, run_path, resumed.step);
  notice.withdraw();  // a signal during the last step: the run finished after all
  if (!cfg.run.mllog_path.empty()) {  // made from the file just written: one mapping for runs and `show --mllog`
    write_file_atomically(cfg.run.mllog_path, mllog_text(read_run_file_view(run_path)));
    log << "mllog: " << cfg.run.mllog_path << "\n";
  }
  if (!cfg.run.checkpoint.keep) remove_checkpoints(out_dir, id.run_id);
  log_summary(log, rec, result.summary, cfg.run.eval.target_accuracy, run_path, result.params_sha256);
  if (setup->memory.device.applies)
    log << "device memory: used up to " << bytes_text(setup->device_peak) << " above the check (estimate "
        << bytes_text(setup->memory.device.total()) << ")\n";
  return {exit_code, run_path};
}

// async_ps: the workers train on a communicator of their own (the timed loop, evaluation and
// the run file are theirs, as in any run); the servers serve them until every worker has left.
RunOutcome train_async_ps(const ResolvedConfig& cfg, const RunIdentity& id, const std::string& out_dir,
                          const std::string& run_path, ResumeMode resume, Communicator& world, std::ostream& log,
                          const std::vector<std::string>& start_warnings) {
  const bool server = world.rank() >= cfg.run.workers;
  std::unique_ptr<Communicator> role = world.split(server ? 1 : 0);
  role->arm_watchdog(cfg.run.dist.timeout_s);
  if (server) {
    end_startup_phase();  // a server stops when server 0 names the step (dist/boundary_arbiter.h)
    const RunConfig& r = cfg.run;
    serve_async_ps(ServeOptions{r.threads, r.workers, r.dist.staleness, sgd_options_of(r), lr_options_of(r)}, world, log);
    return {kExitOk, ""};
  }
  return train_checked(cfg, id, out_dir, run_path, resume, *role, log, start_warnings, &world);
}

// Unless the caller records timeouts itself (a campaign attempt), a watchdog timeout writes the
// run's FAILED marker: rank 0's, or another rank's when rank 0 is not known to be answering.
void record_timeouts_in(const std::string& failed_marker, Communicator& comm) {
  if (comm.has_timeout_report()) return;
  const bool root = comm.rank() == 0;
  comm.set_timeout_report([failed_marker, root](const ExchangeTimeout& timeout) {
    if (!root && timeout.rank0_answering) return;  // rank 0 writes it
    RunMarker failed;
    failed.reason = timeout.reason;
    failed.host = host_name();
    failed.end = utc_timestamp();
    write_marker(failed_marker, failed);
  });
}

}  // namespace

RunOutcome train(const ResolvedConfig& run_cfg, const RunIdentity& id, const std::string& out_dir, Communicator& comm,
                 std::ostream& log, ResumeMode resume) {
  check_run_capabilities(run_cfg, comm.size());
  const ResolvedConfig cfg = run_cfg.for_rank(comm.rank());  // ranks.*: this rank's backend and threads
  check_checkpointing(cfg, resume);
  const std::string run_path = out_dir + "/" + id.run_id + ".h5";
  // From here on, no wait for another rank lasts longer than dist.timeout_s.
  record_timeouts_in(marker_path(run_path, MarkerKind::failed), comm);
  comm.arm_watchdog(cfg.run.dist.timeout_s);
  if (comm.rank() == 0 && comm.size() > 1) log << "ranks (host:pid): " << comm.rank_processes() << "\n";
  check_host_threads(cfg, comm);
  const std::vector<std::string> start_warnings = oversubscription_warnings(cfg, comm);
  set_denormals_flushed(cfg.run.flush_denormals);  // before any thread of the run starts: they inherit it
  std::optional<MarkerReserve> failed_room;  // the FAILED marker's room if the disk fills up (a campaign's too)
  if (comm.rank() == 0) {
    prepare_out_dir(out_dir);
    failed_room.emplace(marker_path(run_path, MarkerKind::failed));
    std::error_code ec;  // an earlier attempt's PREEMPTED marker: this attempt takes over
    std::filesystem::remove(marker_path(run_path, MarkerKind::preempted), ec);
  }
  try {
    try {
      const RunOutcome outcome = cfg.run.dist.strategy == DistStrategy::async_ps
                                     ? train_async_ps(cfg, id, out_dir, run_path, resume, comm, log, start_warnings)
                                     : train_checked(cfg, id, out_dir, run_path, resume, comm, log, start_warnings);
      comm.barrier();  // the other ranks wait (bounded) until rank 0 has written the run file
      return outcome;
    } catch (const StoppedDuringStartup& stop) {  // exit 4 with a checkpoint to resume, else 1
      end_stopped_startup(stop, out_dir, id.run_id, comm);
    } catch (const std::bad_alloc& e) {  // what the memory estimate (train/memory_estimate.h) did not foresee
      throw RuntimeError(std::string("out of memory on rank ") + std::to_string(comm.rank()) + " (" + host_name() +
                         "): an allocation failed (" + e.what() +
                         "); lower batch_per_worker, eval.batch or dataset.prefetch, or run a smaller model");
    }
  } catch (const RuntimeError& e) {
    if (comm.rank() == 0) {
      RunMarker failed;
      failed.reason = e.what();
      failed.host = host_name();
      failed.end = utc_timestamp();
      try {
        write_marker(marker_path(run_path, MarkerKind::failed), failed);
      } catch (const RuntimeError&) {
        // The output directory failed too; the error below still says what went wrong first.
      }
    }
    throw;
  }
}

}  // namespace ts
