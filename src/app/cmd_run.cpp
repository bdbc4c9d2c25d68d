// `trainscale run`: one configuration, one HDF5 run file; or one run of a frozen campaign
// (--manifest DIR --index I, docs/sweeps.md "Tasks"): idempotent, one log per attempt, and
// a DONE or FAILED marker at the end.
#include <boost/program_options.hpp>

#include <chrono>
#include <ctime>
#include <filesystem>
#include <fstream>
#include <iostream>
#include <sstream>
#include <streambuf>

#include <unistd.h>

#include "app/commands.h"
#include "core/error.h"
#include "dist/communicator.h"
#include "sweep/campaign.h"
#include "sweep/config_id.h"
#include "sweep/run_config.h"
#include "sweep/site.h"
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

std::string utc_now() {
  std::time_t t = std::time(nullptr);
  char buf[32];
  std::strftime(buf, sizeof buf, "%Y-%m-%dT%H:%M:%SZ", std::gmtime(&t));
  return buf;
}

// Runs single-rank on errors of other ranks: report and take the whole job down.
int fail_collectively(Communicator& comm, const std::exception& e) {
  if (comm.size() > 1 && dynamic_cast<const ConfigError*>(&e) == nullptr) {
    std::cerr << "trainscale run: rank " << comm.rank() << " on " << comm.host() << ": " << e.what() << "\n";
    std::cerr.flush();
    comm.abort_all(kExitFailed);
  }
  return dynamic_cast<const ConfigError*>(&e) ? kExitUsage : kExitFailed;
}

int run_manifest_entry(const std::string& dir, int64_t index) {
  // Everything that can be refused is checked before MPI starts.
  const Campaign campaign = load_campaign(dir);  // refuses a manifest whose hash changed
  if (index < 0 || index >= static_cast<int64_t>(campaign.runs.size()))
    throw ConfigError("--index " + std::to_string(index) + ": " + campaign.manifest_path + " has runs 0.." +
                      std::to_string(campaign.runs.size() - 1));
  const ManifestRun& run = campaign.runs[index];
  const RunFiles files = run_files(dir, run.run_id);
  if (fs::exists(files.done)) {
    std::cout << "run " << run.run_id << " (index " << index << "): already done (" << files.done << "); skipped\n";
    return kExitOk;
  }

  int argc = 0;
  char** argv = nullptr;
  MpiSession mpi(&argc, &argv);
  auto comm = Communicator::world();
  const bool root = comm->rank() == 0;

  // Rank 0 keeps the attempt's log, the RUNNING marker and, at the end, DONE or FAILED.
  std::ofstream attempt_log;
  int attempt = 0;
  std::error_code ec;
  if (root) {
    fs::create_directories(campaign_logs_dir(dir), ec);
    fs::create_directories(fs::path(dir) / "runs", ec);
    attempt = next_attempt(dir, run.run_id);
    attempt_log.open(attempt_log_path(dir, run.run_id, attempt));
    if (!attempt_log) throw RuntimeError(attempt_log_path(dir, run.run_id, attempt) + ": cannot write the attempt log");
    fs::remove(files.failed, ec);  // a stale reason from an earlier attempt
    write_file_atomically(files.running, "host: " + this_host() + "\npid: " + std::to_string(::getpid()) +
                                             "\nattempt: " + std::to_string(attempt) + "\nstart: " + utc_now() + "\n");
    attempt_log << "trainscale run --manifest " << dir << " --index " << index << "\n"
                << "run_id: " << run.run_id << "\nconfig_id: " << run.config_id << "\ncampaign: " << campaign.name
                << "\nattempt: " << attempt << "\nhost: " << this_host() << "\nworld_size: " << comm->size()
                << "\nstart: " << utc_now() << "\n";
    attempt_log.flush();
  }
  TeeBuf tee(std::cout.rdbuf(), attempt_log.rdbuf());
  std::ostream log(&tee);
  std::ostringstream discard;

  // Ends the attempt: FAILED marker (the trainer may have written one with the same reason)
  // and the log's last lines; returns the exit code for this rank.
  auto failed = [&](const std::exception& e) {
    if (root) {
      std::string reason = e.what();
      if (dynamic_cast<const ConfigError*>(&e)) reason = "configuration error: " + reason;
      for (char& ch : reason)
        if (ch == '\n') ch = ' ';
      write_file_atomically(files.failed, reason + " [attempt " + std::to_string(attempt) + ", log: logs/" + run.run_id +
                                              ".attempt" + std::to_string(attempt) + ".log]\n");
      attempt_log << "end: " << utc_now() << "\nresult: failed\nreason: " << reason << "\n";
      attempt_log.flush();
      fs::remove(files.running, ec);
    }
    return fail_collectively(*comm, e);
  };

  try {
    // Line numbers in messages are the manifest's (campaign.h).
    ResolvedConfig cfg = parse_run_config(run.config_yaml, campaign.manifest_path, {});
    // Storage names map through the site; the run file keeps the manifest's config (logical
    // root and storage name), the typed config reads the physical path.
    double stage_ok = 1.0;
    StagedData staged;
    std::string stage_error;
    if (root) {
      try {
        staged = stage_dataset(campaign.site, cfg.run.dataset.storage, cfg.run.dataset.root);
        attempt_log << "data: " << staged.note << "\nstage_in_s: " << staged.seconds << "\n";
        attempt_log.flush();
      } catch (const std::exception& e) {
        stage_ok = 0.0;
        stage_error = e.what();
      }
    }
    comm->broadcast(&stage_ok, 1, 0);
    if (stage_ok == 0.0) {
      if (root) throw RuntimeError(stage_error);
      return kExitFailed;
    }
    if (!root) staged = stage_dataset(campaign.site, cfg.run.dataset.storage, cfg.run.dataset.root, false);
    cfg.run.dataset.root = staged.root;
    cfg.run.dataset.storage = "local";

    RunIdentity id{run.run_id, run.config_id, campaign.name};
    const std::string runs_dir = (fs::path(dir) / "runs").string();
    RunOutcome out = train(cfg, id, runs_dir, *comm, root ? log : static_cast<std::ostream&>(discard));
    if (root) {
      const std::string status = out.exit_code == kExitDiverged ? "diverged" : "ok";
      write_file_atomically(files.done, "status: " + status + "\nrun_file: " + run.run_id + ".h5\nattempt: " +
                                            std::to_string(attempt) + "\nhost: " + this_host() +
                                            "\nstage_in_s: " + std::to_string(staged.seconds) + "\nend: " + utc_now() + "\n");
      attempt_log << "end: " << utc_now() << "\nresult: " << (status == "ok" ? "done" : "diverged") << "\n";
      attempt_log.flush();
      fs::remove(files.running, ec);
    }
    return out.exit_code;
  } catch (const std::exception& e) {
    const int rc = failed(e);
    if (root) throw;
    return rc;
  }
}

}  // namespace

int command_run(const std::vector<std::string>& args) {
  po::options_description opts(
      "usage: trainscale run --config FILE.yaml [--set key=value ...] [--out DIR]\n"
      "       trainscale run --manifest CAMPAIGN_DIR --index I\n\n"
      "Trains one run configuration (keys: docs/config.md) and writes <out>/<run_id>.h5 (schema\n"
      "trainscale-run/1, docs/hdf5-schema.md); run_id = <config file stem>-<config_id>.\n"
      "With --manifest: run I of a campaign frozen by `trainscale sweep expand` (docs/sweeps.md).\n"
      "It refuses a manifest whose hash changed, skips a run that has a DONE marker, logs the\n"
      "attempt to CAMPAIGN_DIR/logs/<run_id>.attempt<N>.log and ends with runs/<run_id>.DONE\n"
      "(status ok or diverged) or runs/<run_id>.FAILED (the reason).\n"
      "Under MPI (mpirun -np N trainscale run ...) N must equal the config's `workers`.\n"
      "Exit codes: 0 ok, 1 runtime failure, 2 usage/config error, 3 diverged (NaN/Inf loss).\n\noptions");
  opts.add_options()("help,h", "show this help")
      ("config", po::value<std::string>(), "run config YAML file")
      ("set", po::value<std::vector<std::string>>()->composing(), "override a key: --set dist.allreduce=mpi (repeatable)")
      ("out", po::value<std::string>()->default_value("runs"), "directory for the run file")
      ("manifest", po::value<std::string>(), "campaign directory (sweep runs)")
      ("index", po::value<int64_t>(), "manifest index (sweep runs)");
  po::variables_map vm;
  po::store(po::command_line_parser(args).options(opts).run(), vm);
  po::notify(vm);
  if (vm.count("help")) {
    std::cout << opts << "\n";
    return kExitOk;
  }
  if (vm.count("manifest") || vm.count("index")) {
    if (!vm.count("manifest") || !vm.count("index"))
      throw ConfigError("--manifest CAMPAIGN_DIR and --index I go together (see trainscale run --help)");
    if (vm.count("config") || vm.count("set"))
      throw ConfigError("--manifest runs take their config from the manifest; drop --config/--set");
    return run_manifest_entry(vm["manifest"].as<std::string>(), vm["index"].as<int64_t>());
  }
  if (!vm.count("config")) throw ConfigError("--config FILE.yaml is required (see trainscale run --help)");
  const std::string path = vm["config"].as<std::string>();
  std::vector<std::string> overrides;
  if (vm.count("set")) overrides = vm["set"].as<std::vector<std::string>>();

  // Parse before MPI starts: a config error costs no MPI start-up and is reported once.
  ResolvedConfig cfg = load_run_config(path, overrides);
  RunIdentity id;
  id.config_id = config_id_of(cfg.yaml);
  id.run_id = std::filesystem::path(path).stem().string() + "-" + id.config_id;

  int argc = 0;
  char** argv = nullptr;
  MpiSession mpi(&argc, &argv);
  auto comm = Communicator::world();
  try {
    std::ostringstream discard;
    RunOutcome out = train(cfg, id, vm["out"].as<std::string>(), *comm, comm->rank() == 0 ? std::cout : discard);
    return out.exit_code;
  } catch (const std::exception& e) {
    const int rc = fail_collectively(*comm, e);
    if (comm->rank() != 0) return rc;
    throw;
  }
}

}  // namespace ts
