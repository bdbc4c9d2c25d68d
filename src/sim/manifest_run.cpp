// Simulated campaign runs (see manifest_run.h).
#include "sim/manifest_run.h"

#include <unistd.h>

#include <filesystem>
#include <fstream>
#include <iostream>

#include "core/error.h"
#include "core/host_info.h"
#include "core/run_marker.h"
#include "core/timer.h"
#include "perfmodel/cluster.h"
#include "sweep/campaign.h"

namespace ts::sim {

namespace fs = std::filesystem;

SimRunRequest request_of(const SimFlags& flags, ResolvedConfig cfg) {
  if (flags.cluster.empty()) throw ConfigError("--cluster CLUSTER.yaml is required (see trainscale-sim run --help)");
  SimRunRequest q;
  q.cfg = std::move(cfg);
  q.cluster = perf::load_cluster_file(flags.cluster, flags.cluster_sets);
  q.steps = flags.steps.value_or(3);
  if (!flags.network_model.empty()) q.network_model = flags.network_model;
  q.coll_selector = flags.coll_selector;
  q.workers_per_node = flags.workers_per_node;
  return q;
}

namespace {

RunMarker stamped(int attempt) {
  RunMarker m;
  m.attempt = attempt;
  m.host = host_name();
  return m;
}

// Runs the simulation of one manifest entry with its markers and attempt log.
void simulate_entry(const std::string& dir, const Campaign& campaign, const ManifestRun& run, const SimFlags& flags) {
  const RunFiles files = run_files(dir, run.run_id);
  std::error_code ec;
  fs::create_directories(campaign_logs_dir(dir), ec);
  fs::create_directories(fs::path(dir) / "runs", ec);
  const int attempt = next_attempt(dir, run.run_id);
  const std::string log_path = attempt_log_path(dir, run.run_id, attempt);
  std::ofstream log(log_path);
  if (!log) throw RuntimeError(log_path + ": cannot write the attempt log");
  fs::remove(files.failed, ec);
  RunMarker running = stamped(attempt);
  running.pid = ::getpid();
  running.pid_start = process_start_ticks(running.pid).value_or(0);
  running.start = utc_timestamp();
  write_marker(files.running, running);
  log << "trainscale-sim run --manifest " << dir << " --index " << run.index << "\nrun_id: " << run.run_id
      << "\ncampaign: " << campaign.name << "\nattempt: " << attempt << "\nstart: " << utc_timestamp() << "\n";
  try {
    SimRunRequest q = request_of(flags, parse_run_config(run.config_yaml, campaign.manifest_path, {}));
    q.run_id = run.run_id;
    q.config_id = run.config_id;
    q.campaign = campaign.name;
    q.run_path = files.run_file;
    simulate_run(q, log);
    RunMarker done = stamped(attempt);
    done.status = "ok";
    done.run_file = run.run_id + ".h5";
    done.end = utc_timestamp();
    write_marker(files.done, done);
    log << "end: " << utc_timestamp() << "\nresult: done\n";
  } catch (const std::exception& e) {
    RunMarker failed = stamped(attempt);
    failed.reason = dynamic_cast<const ConfigError*>(&e) ? std::string("configuration error: ") + e.what() : e.what();
    for (char& c : failed.reason)
      if (c == '\n') c = ' ';
    failed.log = "logs/" + fs::path(log_path).filename().string();
    failed.end = utc_timestamp();
    write_marker(files.failed, failed);
    log << "end: " << utc_timestamp() << "\nresult: failed\nreason: " << failed.reason << "\n";
    fs::remove(files.running, ec);
    throw;
  }
  fs::remove(files.running, ec);
}

}  // namespace

int run_manifest_entry(const std::string& dir, int64_t index, const SimFlags& flags) {
  const Campaign campaign = load_campaign(dir);
  if (index < 0 || index >= static_cast<int64_t>(campaign.runs.size()))
    throw ConfigError("--index " + std::to_string(index) + ": " + campaign.manifest_path + " has runs 0.." +
                      std::to_string(campaign.runs.size() - 1));
  const ManifestRun& run = campaign.runs[static_cast<size_t>(index)];
  if (fs::exists(run_files(dir, run.run_id).done)) {
    std::cout << "run " << run.run_id << " (index " << index << "): already done; skipped\n";
    return kExitOk;
  }
  // What the command line leaves out comes from the campaign's site (scheduler: simulate).
  SimFlags f = flags;
  const SiteSimulate& site = campaign.site.simulate;
  if (f.cluster.empty()) f.cluster = site.cluster;
  if (f.cluster_sets.empty()) f.cluster_sets = site.cluster_set;
  if (!f.steps) f.steps = site.steps;
  if (f.network_model.empty()) f.network_model = site.network_model;
  if (f.coll_selector.empty()) f.coll_selector = site.coll_selector;
  simulate_entry(dir, campaign, run, f);
  std::cout << "run " << run.run_id << " (index " << index << "): simulated, " << run_files(dir, run.run_id).run_file
            << "\n";
  return kExitOk;
}

}  // namespace ts::sim
