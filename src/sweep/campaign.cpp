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

#include "core/error.h"
#include "sweep/expand.h"
#include "sweep/sweep_file.h"

namespace ts {
namespace {

namespace fs = std::filesystem;

std::string trim(std::string s) {
  while (!s.empty() && (s.back() == '\n' || s.back() == '\r' || s.back() == ' ')) s.pop_back();
  size_t i = 0;
  while (i < s.size() && s[i] == ' ') ++i;
  return s.substr(i);
}

std::string json_string(const std::string& s) {
  std::string out = "\"";
  for (unsigned char c : s) {
    switch (c) {
      case '"': out += "\\\""; break;
      case '\\': out += "\\\\"; break;
      case '\n': out += "\\n"; break;
      case '\r': out += "\\r"; break;
      case '\t': out += "\\t"; break;
      default:
        if (c < 0x20) {
          char buf[8];
          std::snprintf(buf, sizeof buf, "\\u%04x", c);
          out += buf;
        } else {
          out += static_cast<char>(c);
        }
    }
  }
  return out + "\"";
}

// "key: value" lines of a marker file.
std::map<std::string, std::string> marker_fields(const std::string& text) {
  std::map<std::string, std::string> out;
  std::istringstream in(text);
  std::string line;
  while (std::getline(in, line)) {
    auto colon = line.find(':');
    if (colon != std::string::npos) out[trim(line.substr(0, colon))] = trim(line.substr(colon + 1));
  }
  return out;
}

bool process_alive(long pid) { return pid > 0 && (::kill(static_cast<pid_t>(pid), 0) == 0 || errno == EPERM); }

}  // namespace

std::string read_text_file(const std::string& path) {
  std::ifstream in(path, std::ios::binary);
  std::ostringstream ss;
  ss << in.rdbuf();
  return ss.str();
}

void write_file_atomically(const std::string& path, const std::string& text) {
  const std::string tmp = path + ".tmp-" + std::to_string(::getpid());
  {
    std::ofstream out(tmp, std::ios::binary | std::ios::trunc);
    if (!out) throw RuntimeError(tmp + ": cannot write (check the directory's permissions)");
    out << text;
    out.close();
    if (!out) throw RuntimeError(tmp + ": write failed (disk full?)");
  }
  std::error_code ec;
  fs::rename(tmp, path, ec);
  if (ec) throw RuntimeError(path + ": rename from " + tmp + " failed: " + ec.message());
}

std::string this_host() {
  char buf[256] = {0};
  if (::gethostname(buf, sizeof buf - 1) != 0) return "unknown";
  return buf;
}

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
  YAML::Node root;
  try {
    root = YAML::Load(text);
  } catch (const YAML::Exception& e) {
    throw ConfigError(c.manifest_path + ":" + std::to_string(e.mark.line + 1) + ": not valid YAML: " + e.msg);
  }
  if (!root.IsMap() || !root["runs"] || !root["runs"].IsSequence())
    throw ConfigError(c.manifest_path + ": expected a mapping with a `runs:` list (written by trainscale sweep expand)");
  c.name = root["campaign"] ? root["campaign"].Scalar() : fs::path(dir).filename().string();
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
  const std::string base = (fs::path(campaign_dir) / "runs" / run_id).string();
  return {base + ".h5", base + ".DONE", base + ".FAILED", base + ".RUNNING"};
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

CampaignStatus campaign_status(const Campaign& campaign, const SchedulerStates& scheduler) {
  CampaignStatus st;
  const std::string host = this_host();
  for (const auto& run : campaign.runs) {
    RunStatus rs;
    rs.index = run.index;
    rs.run_id = run.run_id;
    const RunFiles f = run_files(campaign.dir, run.run_id);
    auto sched = scheduler.find(run.index);
    // A RUNNING marker: live (or on another host, where it cannot be checked) or dead.
    bool marker = false, live = false;
    std::string marker_note;
    if (fs::exists(f.running)) {
      const auto fields = marker_fields(read_text_file(f.running));
      const std::string on = fields.count("host") ? fields.at("host") : "";
      long pid = 0;
      try {
        pid = fields.count("pid") ? std::stol(fields.at("pid")) : 0;
      } catch (const std::exception&) {
      }
      const std::string attempt = fields.count("attempt") ? fields.at("attempt") : "?";
      marker = true;
      live = on != host || process_alive(pid);
      marker_note = live ? "attempt " + attempt + " on " + on
                         : "attempt " + attempt + " on " + on + " (pid " + std::to_string(pid) +
                               ") ended without a result (killed?); see logs/" + run.run_id + ".attempt" + attempt + ".log";
    }
    if (fs::exists(f.done)) {
      const auto fields = marker_fields(read_text_file(f.done));
      auto it = fields.find("status");
      rs.state = it != fields.end() && it->second == "diverged" ? RunState::diverged : RunState::done;
    } else if (sched != scheduler.end() && sched->second == "running") {
      rs.state = RunState::running;
      rs.reason = "scheduler: running";
    } else if (marker && live) {
      rs.state = RunState::running;
      rs.reason = marker_note;
    } else if (sched != scheduler.end()) {
      rs.state = RunState::pending;
      rs.reason = "scheduler: pending";
    } else if (marker) {
      rs.state = RunState::failed;
      rs.reason = marker_note;
    } else if (fs::exists(f.failed)) {
      rs.state = RunState::failed;
      rs.reason = trim(read_text_file(f.failed));
      if (rs.reason.empty()) rs.reason = "FAILED marker without a reason";
    }
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
    out << (first ? "" : ", ") << "{\"index\": " << r.index << ", \"run_id\": " << json_string(r.run_id)
        << ", \"reason\": " << json_string(r.reason) << "}";
    first = false;
  }
  out << "], \"running\": " << st.running << ", \"pending\": " << st.pending << ", \"missing\": " << st.missing << "}\n";
  return out.str();
}

}  // namespace ts
