// Campaign directory: manifest loading with the hash check, run files and markers, run states
// and the status report (see campaign.h).
#include "sweep/campaign.h"

#include <yaml-cpp/yaml.h>

#include <algorithm>
#include <cerrno>
#include <csignal>
#include <filesystem>
#include <fstream>
#include <sstream>

#include <unistd.h>

#include "config/strict_yaml.h"
#include "core/error.h"
#include "core/file_io.h"
#include "core/host_info.h"
#include "core/names.h"
#include "core/run_marker.h"
#include "core/strings.h"
#include "sweep/expand.h"
#include "sweep/sweep_file.h"

namespace ts {
namespace {

namespace fs = std::filesystem;

bool process_alive(long pid) { return pid > 0 && (::kill(static_cast<pid_t>(pid), 0) == 0 || errno == EPERM); }

}  // namespace

Campaign load_campaign(const std::string& dir) {
  Campaign c;
  c.dir = dir;
  c.manifest_path = (fs::path(dir) / "manifest.yaml").string();
  if (!fs::is_regular_file(c.manifest_path))
    throw ConfigError(dir + ": no manifest.yaml; is this a campaign directory? (create one with trainscale sweep expand SWEEP.yaml --out " +
                      dir + ")");
  const std::string text = read_text_file(c.manifest_path);
  const std::string hash_path = (fs::path(dir) / "manifest.hash").string();
  if (!fs::is_regular_file(hash_path))
    throw ConfigError(hash_path + ": missing; the campaign is not frozen (expand it again with trainscale sweep expand)");
  c.hash = trim(read_text_file(hash_path));
  const std::string actual = manifest_hash(text);
  if (actual != c.hash)
    throw ConfigError(c.manifest_path + ": the manifest's hash is " + actual + " but manifest.hash says " + c.hash +
                      "; the manifest changed after it was frozen. Runs refuse a changed manifest: expand the sweep into a new campaign directory");
  const YAML::Node root = load_yaml_strictly(text, c.manifest_path);
  if (!root.IsMap() || !root["runs"] || !root["runs"].IsSequence())
    throw ConfigError(c.manifest_path + ": expected a mapping with a `runs:` list (written by trainscale sweep expand)");
  c.name = root["campaign"] ? root["campaign"].Scalar() : fs::path(dir).filename().string();
  // Names become file and job names: checked where they are read, not only where they were made.
  check_name(c.name, "campaign name", root["campaign"] ? c.manifest_path + ":" + std::to_string(root["campaign"].Mark().line + 1)
                                                        : c.manifest_path, "campaign");
  {
    YAML::Emitter em;
    em << YAML::Flow;
    emit_yaml_node(em, root["resources"] ? root["resources"] : YAML::Node(YAML::NodeType::Map));
    c.resources_yaml = em.c_str();
  }
  for (const auto& e : root["runs"]) {
    ManifestRun r;
    r.line = e.Mark().line + 1;
    const std::string where = c.manifest_path + ":" + std::to_string(r.line);
    if (!e.IsMap() || !e["index"] || !e["run_id"] || !e["config_id"] || !e["config"])
      throw ConfigError(where + ": a run entry needs index, run_id, config_id and config");
    try {
      r.index = e["index"].as<int64_t>();
      r.repetition = e["repetition"] ? e["repetition"].as<int>() : 0;
    } catch (const YAML::Exception&) {
      throw ConfigError(where + ": key 'index': expected an integer");
    }
    if (r.index != static_cast<int64_t>(c.runs.size()))
      throw ConfigError(where + ": key 'index': " + std::to_string(r.index) + " out of order (expected " + std::to_string(c.runs.size()) + ")");
    r.run_id = e["run_id"].Scalar();
    r.config_id = e["config_id"].Scalar();
    // A run id names the task's files under runs/ and logs/: one with '/' or '..' would write elsewhere.
    check_name(r.run_id, "run id", c.manifest_path + ":" + std::to_string(e["run_id"].Mark().line + 1), "run_id");
    check_name(r.config_id, "config id", c.manifest_path + ":" + std::to_string(e["config_id"].Mark().line + 1), "config_id");
    // The config re-emitted in block style has one key per line like the manifest, so leading
    // newlines make the run-config parser's line numbers the manifest's line numbers.
    YAML::Emitter em;
    emit_yaml_node(em, e["config"]);
    const int config_line = e["config"].Mark().is_null() ? 0 : e["config"].Mark().line;
    r.config_yaml = std::string(static_cast<size_t>(std::max(config_line, 0)), '\n') + em.c_str() + "\n";
    c.runs.push_back(std::move(r));
  }
  const fs::path site = fs::path(dir) / "site.yaml";
  if (fs::is_regular_file(site)) {
    c.site = load_site_file(site.string());
    c.has_site = true;
  } else {
    c.site = default_local_site();
  }
  return c;
}

RunFiles run_files(const std::string& campaign_dir, const std::string& run_id) {
  const std::string run_file = (fs::path(campaign_dir) / "runs" / (run_id + ".h5")).string();
  return {run_file, marker_path(run_file, MarkerKind::done), marker_path(run_file, MarkerKind::failed),
          marker_path(run_file, MarkerKind::running)};
}

std::string campaign_logs_dir(const std::string& campaign_dir) { return (fs::path(campaign_dir) / "logs").string(); }
std::string campaign_jobs_dir(const std::string& campaign_dir) { return (fs::path(campaign_dir) / "jobs").string(); }

std::string attempt_log_path(const std::string& campaign_dir, const std::string& run_id, int attempt) {
  return (fs::path(campaign_logs_dir(campaign_dir)) / (run_id + ".attempt" + std::to_string(attempt) + ".log")).string();
}

int next_attempt(const std::string& campaign_dir, const std::string& run_id) {
  int n = 1;
  while (fs::exists(attempt_log_path(campaign_dir, run_id, n))) ++n;
  return n;
}

const char* run_state_name(RunState s) {
  switch (s) {
    case RunState::done: return "done";
    case RunState::diverged: return "diverged";
    case RunState::failed: return "failed";
    case RunState::running: return "running";
    case RunState::pending: return "pending";
    case RunState::missing: return "missing";
  }
  return "?";
}

namespace {

// A run's state from its markers and the scheduler, first match wins (campaign.h).
RunStatus run_status(const Campaign& campaign, const ManifestRun& run, const SchedulerStates& scheduler,
                     const std::string& host) {
  RunStatus rs;
  rs.index = run.index;
  rs.run_id = run.run_id;
  const RunFiles f = run_files(campaign.dir, run.run_id);
  const auto sched = scheduler.find(run.index);
  // A RUNNING marker: live (or on another host, where it cannot be checked) or dead.
  const std::optional<RunMarker> running = read_marker_if_present(f.running);
  bool live = false;
  std::string running_note;
  if (running) {
    const std::string attempt = running->attempt > 0 ? std::to_string(running->attempt) : "?";
    live = running->host != host || process_alive(running->pid);
    running_note = "attempt " + attempt + " on " + running->host;
    if (!live)
      running_note += " (pid " + std::to_string(running->pid) + ") ended without a result (killed?); see logs/" +
                      run.run_id + ".attempt" + attempt + ".log";
  }
  std::optional<RunMarker> marker;
  if ((marker = read_marker_if_present(f.done))) {
    rs.state = marker->status == "diverged" ? RunState::diverged : RunState::done;
  } else if (sched != scheduler.end() && sched->second == "running") {
    rs.state = RunState::running;
    rs.reason = "scheduler: running";
  } else if (running && live) {
    rs.state = RunState::running;
    rs.reason = running_note;
  } else if (sched != scheduler.end()) {
    rs.state = RunState::pending;
    rs.reason = "scheduler: pending";
  } else if (running) {
    rs.state = RunState::failed;
    rs.reason = running_note;
  } else if ((marker = read_marker_if_present(f.failed))) {
    rs.state = RunState::failed;
    rs.reason = failure_summary(*marker);
  }
  return rs;
}

}  // namespace

CampaignStatus campaign_status(const Campaign& campaign, const SchedulerStates& scheduler) {
  CampaignStatus st;
  const std::string host = host_name();
  for (const auto& run : campaign.runs) {
    RunStatus rs = run_status(campaign, run, scheduler, host);
    switch (rs.state) {
      case RunState::done: ++st.done; break;
      case RunState::diverged: ++st.diverged; break;
      case RunState::failed: ++st.failed; break;
      case RunState::running: ++st.running; break;
      case RunState::pending: ++st.pending; break;
      case RunState::missing: ++st.missing; break;
    }
    st.runs.push_back(std::move(rs));
  }
  st.total = static_cast<int64_t>(campaign.runs.size());
  return st;
}

std::string status_text(const Campaign& campaign, const CampaignStatus& st) {
  std::ostringstream out;
  out << "campaign " << campaign.name << " (" << campaign.dir << "): " << st.total << " runs\n"
      << "  done " << st.done << ", diverged " << st.diverged << ", failed " << st.failed << ", running " << st.running
      << ", pending " << st.pending << ", missing " << st.missing << "\n";
  for (const auto& r : st.runs)
    if (r.state == RunState::failed) out << "  failed  " << r.index << "  " << r.run_id << ": " << r.reason << "\n";
  for (const auto& r : st.runs)
    if (r.state == RunState::running) out << "  running " << r.index << "  " << r.run_id << " (" << r.reason << ")\n";
  for (const auto& n : st.notes) out << "  note: " << n << "\n";
  return out.str();
}

std::string status_json(const CampaignStatus& st) {
  std::ostringstream out;
  out << "{\"total\": " << st.total << ", \"done\": " << st.done << ", \"diverged\": " << st.diverged << ", \"failed\": [";
  bool first = true;
  for (const auto& r : st.runs) {
    if (r.state != RunState::failed) continue;
    out << (first ? "" : ", ") << "{\"index\": " << r.index << ", \"run_id\": " << json_quote(r.run_id)
        << ", \"reason\": " << json_quote(r.reason) << "}";
    first = false;
  }
  out << "], \"running\": " << st.running << ", \"pending\": " << st.pending << ", \"missing\": " << st.missing << "}\n";
  return out.str();
}

}  // namespace ts
