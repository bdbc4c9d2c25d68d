// A run as a sequence of named phases (see trainer.h): check, set up, loop, gather, write.
#include "train/trainer.h"

#include <unistd.h>

#include <filesystem>
#include <fstream>
#include <new>
#include <ostream>

#include "core/error.h"
#include "core/host_info.h"
#include "core/run_marker.h"
#include "core/timer.h"
#include "train/capabilities.h"
#include "train/loop.h"
#include "train/progress.h"
#include "train/resources.h"
#include "train/run_output.h"
#include "train/run_setup.h"

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

RunOutcome train_checked(const ResolvedConfig& cfg, const RunIdentity& id, const std::string& run_path,
                         Communicator& comm, std::ostream& log) {
  const bool root = comm.rank() == 0;
  const std::string start_time = utc_timestamp();
  std::unique_ptr<RunSetup> setup = set_up_run(cfg, comm);
  if (root) log_run_start(log, id.run_id, cfg.run, *setup, comm.size());
  const RunRecording rec = run_loop(cfg.run, *setup, comm, log);
  RunResult result = gather_recording(rec, setup->exchange->times_ps_phases(), comm);
  const int exit_code = rec.diverged ? kExitDiverged : kExitOk;
  if (!root) return {exit_code, ""};
  write_run_output(result, rec, cfg, id, *setup, start_time, run_path);
  log_summary(log, rec, result.summary, cfg.run.eval.target_accuracy, run_path);
  return {exit_code, run_path};
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

RunOutcome train(const ResolvedConfig& cfg, const RunIdentity& id, const std::string& out_dir, Communicator& comm,
                 std::ostream& log) {
  check_run_capabilities(cfg, comm.size());
  const std::string run_path = out_dir + "/" + id.run_id + ".h5";
  // From here on, no wait for another rank lasts longer than dist.timeout_s.
  record_timeouts_in(marker_path(run_path, MarkerKind::failed), comm);
  comm.arm_watchdog(cfg.run.dist.timeout_s);
  if (comm.rank() == 0 && comm.size() > 1) log << "ranks (host:pid): " << comm.rank_processes() << "\n";
  check_host_threads(cfg, comm);
  if (comm.rank() == 0) prepare_out_dir(out_dir);
  try {
    try {
      const RunOutcome outcome = train_checked(cfg, id, run_path, comm, log);
      comm.barrier();  // the other ranks wait (bounded) until rank 0 has written the run file
      return outcome;
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
