// Campaign directory: manifest loading with the hash check, run files and markers, the DONE
// check against the run file, run states and the status report (see campaign.h).
#include "sweep/campaign.h"

#include <yaml-cpp/yaml.h>

#include <algorithm>
#include <cerrno>
#include <csignal>
#include <filesystem>
#include <fstream>
#include <sstream>

#include <unistd.h>

#include "config/config_id.h"
#include "config/schema.h"
#include "config/strict_yaml.h"
#include "core/error.h"
#include "core/file_io.h"
#include "core/host_info.h"
#include "core/names.h"
#include "core/run_marker.h"
#include "core/strings.h"
#include "metrics/run_file_check.h"
#include "sweep/expand.h"
#include "sweep/sweep_file.h"

namespace ts {
namespace {

namespace fs = std::filesystem;

// `a` exists and was written after `b` (a FAILED attempt after a PREEMPTED one).
bool written_after(const std::string& a, const std::string& b) {
  std::error_code ea, eb;
  const auto ta = fs::last_write_time(a, ea), tb = fs::last_write_time(b, eb);
  return !ea && !eb && ta > tb;
}

// The keys a sweep file varies, in file order: matrix keys, zip groups' keys, then keys only
// `include` entries name. Empty when the file is missing or not a sweep (the status and
// progress lines then name runs by id alone).
std::vector<std::string> read_swept_keys(const std::string& sweep_path) {
  std::vector<std::string> keys;
  auto add = [&](const YAML::Node& map) {
    if (!map.IsMap()) return;
    for (const auto& kv : map)
      if (kv.first.IsScalar() && std::find(keys.begin(), keys.end(), kv.first.Scalar()) == keys.end())
        keys.push_back(kv.first.Scalar());
  };
  try {
    if (!fs::is_regular_file(sweep_path)) return keys;
    const YAML::Node root = YAML::LoadFile(sweep_path);
    if (!root.IsMap()) return keys;
    add(root["matrix"]);
    if (root["zip"] && root["zip"].IsMap())
      for (const auto& group : root["zip"]) add(group.second);
    if (root["include"] && root["include"].IsSequence())
      for (const auto& entry : root["include"]) add(entry);
  } catch (const YAML::Exception&) {
    keys.clear();
  }
  return keys;
}

// What is wrong with a manifest entry's ids, recomputed from its config (docs/sweeps.md "Ids and
// seeds"); "" when they hold. config_id is the hash of the canonical config before the
// per-repetition seed: the config as frozen (the manifest holds the canonical text, block style,
// strings double-quoted), with its own seed (a point that sets seed) or, where the seed is the
// derived one, with the base's seed put back. Hashing the frozen text, not a config resolved
// again, keeps campaigns of earlier versions (fewer schema keys) checkable.
std::string id_problem(const YAML::Node& config, const ManifestRun& r, const std::string& base_seed) {
  const std::string run_id = r.config_id + "-r" + std::to_string(r.repetition);
  if (r.run_id != run_id)
    return "run_id '" + r.run_id + "' is not its config_id and repetition ('" + run_id + "')";
  if (!config.IsMap()) return "its config is not a mapping";
  auto hash = [](const YAML::Node& node) {
    YAML::Emitter em;
    emit_yaml_node(em, node);
    return config_id_of(std::string(em.c_str()) + "\n");
  };
  const std::string own = hash(config);
  if (own == r.config_id) return "";  // a point that sets its own seed
  const YAML::Node seed = config["seed"];
  if (seed && seed.IsScalar() && seed.Scalar() == std::to_string(derive_seed(r.config_id, r.repetition))) {
    YAML::Node before = YAML::Clone(config);
    before["seed"] = base_seed;
    if (hash(before) == r.config_id) return "";
    return "config_id '" + r.config_id + "' is not the hash of its config (with the base seed " + base_seed + ": " +
           hash(before) + ")";
  }
  return "config_id '" + r.config_id + "' is not the hash of its config (" + own +
         "), nor is its seed the one derived from it (" + std::to_string(derive_seed(r.config_id, r.repetition)) + ")";
}

// Each RunState, in the enum's order: its name and where CampaignStatus counts it.
struct RunStateRow {
  const char* name;
  int64_t CampaignStatus::*count;
};
constexpr RunStateRow kRunStates[] = {
    {"done", &CampaignStatus::done},       {"diverged", &CampaignStatus::diverged},
    {"failed", &CampaignStatus::failed},   {"preempted", &CampaignStatus::preempted},
    {"running", &CampaignStatus::running}, {"pending", &CampaignStatus::pending},
    {"missing", &CampaignStatus::missing}, {"unsupported", &CampaignStatus::unsupported}};

// What a RUNNING marker says: a live attempt (or one on another host, which cannot be checked)
// or the leftover of a process that died.
struct RunningMarker {
  std::optional<RunMarker> marker;
  bool live = false;
  std::string note;
};

RunningMarker read_running(const RunFiles& f, const std::string& run_id, const std::string& host) {
  RunningMarker r;
  r.marker = read_marker_if_present(f.running);
  if (!r.marker) return r;
  const std::string attempt = r.marker->attempt > 0 ? std::to_string(r.marker->attempt) : "?";
  r.live = r.marker->host != host || attempt_alive(*r.marker);
  r.note = "attempt " + attempt + " on " + r.marker->host;
  if (!r.live)
    r.note += " (pid " + std::to_string(r.marker->pid) + ") ended without a result (killed?" +
              (process_alive(r.marker->pid) ? "; its pid is now another process's" : "") + "); see logs/" + run_id +
              ".attempt" + attempt + ".log";
  return r;
}

// Where `index` stands in a packed task's lane that the scheduler runs (its runs one after another):
// the current run is the first with a RUNNING marker, else the first that is neither done,
// unsupported nor failed; -1 (earlier), 0 (current) or 1 (later) than it. No current run: every
// run has been tried (earlier).
int pack_turn(const Campaign& campaign, const std::vector<int64_t>& pack, int64_t index) {
  auto files_of = [&](int64_t i) { return run_files(campaign.dir, campaign.runs.at(static_cast<size_t>(i)).run_id); };
  auto done = [&](int64_t i) { return check_done(files_of(i), campaign.runs.at(static_cast<size_t>(i))).valid(); };
  auto first = [&](const auto& is_current) {  // of the pack's valid indices
    return std::find_if(pack.begin(), pack.end(), [&](int64_t i) {
      return i >= 0 && i < static_cast<int64_t>(campaign.runs.size()) && is_current(i);
    });
  };
  auto current = first([&](int64_t i) { return read_marker_if_present(files_of(i).running) && !done(i); });
  if (current == pack.end())
    current = first([&](int64_t i) {
      return !done(i) && !read_marker_if_present(files_of(i).unsupported) && !read_marker_if_present(files_of(i).failed);
    });
  const auto mine = std::find(pack.begin(), pack.end(), index);
  return mine < current ? -1 : mine == current ? 0 : 1;
}

// What the scheduler says about `run`, with a packed task's state given to each of its runs by
// its turn (pack_turn): the current one runs, later ones wait, earlier ones have no state.
SchedulerTask scheduler_task(const Campaign& campaign, const ManifestRun& run, const SchedulerStates& scheduler) {
  const auto sched = scheduler.find(run.index);
  if (sched == scheduler.end()) return {};
  const SchedulerTask& task = sched->second;
  if (task.state != "running" || task.pack.size() < 2) return task;
  const auto position = std::find(task.pack.begin(), task.pack.end(), run.index) - task.pack.begin();
  const std::string of = "run " + std::to_string(position + 1) + " of " + std::to_string(task.pack.size()) +
                         " of its packed array task";
  const bool lanes = task.lanes > 1 && !task.lane.empty();  // side by side: the run's lane is its sequence
  const std::string how = lanes ? ", which runs them " + std::to_string(task.lanes) + " side by side"
                                : ", which runs them one after another";
  switch (pack_turn(campaign, lanes ? task.lane : task.pack, run.index)) {
    case -1: return {};
    case 0: return {"running", "scheduler: running, " + of, task.pack, task.lanes, task.lane};
    default: return {"pending", "waiting: " + of + how, task.pack, task.lanes, task.lane};
  }
}

// A run's state from its markers, its run file and the scheduler, first match wins (campaign.h).
RunStatus classify_run(const Campaign& campaign, const ManifestRun& run, const SchedulerStates& scheduler,
                       const std::string& host) {
  RunStatus rs;
  rs.index = run.index;
  rs.run_id = run.run_id;
  const RunFiles f = run_files(campaign.dir, run.run_id);
  const SchedulerTask sched = scheduler_task(campaign, run, scheduler);
  // "ended": the scheduler answered and lists the task's job no more. A RUNNING marker it left on
  // another host is then from processes that are gone (its node lost, or the job killed before
  // its script could record why).
  const bool ended = sched.state == "ended";
  const bool scheduled = sched.state == "running" || sched.state == "pending";
  const DoneCheck done = check_done(f, run);
  const RunningMarker running = read_running(f, run.run_id, host);
  std::optional<RunMarker> marker;
  if (done.valid()) {
    rs.state = done.marker->status == "diverged" ? RunState::diverged : RunState::done;
  } else if ((marker = read_marker_if_present(f.unsupported))) {
    rs.state = RunState::unsupported;
    rs.reason = marker->reason;
  } else if (sched.state == "running") {
    rs.state = RunState::running;
    rs.reason = sched.reason.empty() ? "scheduler: running" : sched.reason;
  } else if (running.marker && running.live && !ended && !(scheduled && running.marker->host != host)) {
    // (A task the scheduler holds queued while its marker names another host was requeued: its
    // processes there are gone, and the scheduler, not the marker, says what happens next.)
    rs.state = RunState::running;
    rs.reason = running.note;
  } else if (scheduled) {
    rs.state = RunState::pending;
    rs.reason = sched.reason;
  } else if ((marker = read_marker_if_present(f.preempted)) && !written_after(f.failed, f.preempted)) {
    rs.state = RunState::preempted;  // "preempted by SIGTERM at step 120 [attempt 2, log: logs/x.attempt2.log]"
    if (marker->reason.empty()) marker->reason = "stopped by a signal after a checkpoint";
    rs.reason = failure_summary(*marker);
  } else if (done.marker) {
    rs.state = done.file_missing ? RunState::missing : RunState::failed;
    rs.reason = done.problem;
  } else if (running.marker && !(ended && written_after(f.failed, f.running))) {
    rs.state = RunState::failed;
    rs.reason = !ended || !running.live ? running.note
                                        : "attempt " + std::to_string(running.marker->attempt) + " on " + running.marker->host +
                                              " ended without a result: its job is no longer in the scheduler's queue (a "
                                              "node lost, or the job killed before it could say why); see logs/" +
                                              run.run_id + ".attempt" + std::to_string(running.marker->attempt) + ".log";
  } else if ((marker = read_marker_if_present(f.failed))) {
    rs.state = RunState::failed;
    rs.reason = failure_summary(*marker);
  } else if (sched.state == "not submitted") {
    rs.reason = "not submitted";
  }
  return rs;
}

// The runs in `state` grouped by their reason, in order of first appearance.
std::vector<std::pair<std::string, std::vector<const RunStatus*>>> by_reason(const CampaignStatus& st, RunState state) {
  std::vector<std::pair<std::string, std::vector<const RunStatus*>>> groups;
  for (const auto& r : st.runs) {
    if (r.state != state) continue;
    const std::string reason = r.reason.empty() ? "no reason given" : r.reason;
    auto it = std::find_if(groups.begin(), groups.end(), [&](const auto& g) { return g.first == reason; });
    if (it == groups.end()) groups.push_back({reason, {&r}});
    else it->second.push_back(&r);
  }
  return groups;
}

// A JSON list of {index, run_id, reason} for the runs in `state`.
std::string json_runs(const CampaignStatus& st, RunState state) {
  std::string out = "[";
  for (const auto& r : st.runs) {
    if (r.state != state) continue;
    out += (out.size() > 1 ? ", " : "") + std::string("{\"index\": ") + std::to_string(r.index) +
           ", \"run_id\": " + json_quote(r.run_id) + ", \"reason\": " + json_quote(r.reason) + "}";
  }
  return out + "]";
}

}  // namespace

std::string run_label(const Campaign& campaign, const ManifestRun& run) {
  if (campaign.swept_keys.empty()) return run.run_id;
  YAML::Node config;
  try {
    config = YAML::Load(run.config_yaml);
  } catch (const YAML::Exception&) {
    return run.run_id;
  }
  std::string values;
  for (const auto& key : campaign.swept_keys) {
    YAML::Node node = config;  // reset(), not operator=: assigning a node would overwrite the tree it refers to
    for (const std::string& part : split(key, '.')) node.reset(node.IsMap() ? static_cast<const YAML::Node&>(node)[part] : YAML::Node());
    std::string value = "-";
    if (node.IsScalar()) {
      value = node.Scalar();
    } else if (node.IsDefined() && !node.IsNull()) {
      YAML::Emitter em;
      em << YAML::Flow << node;
      value = em.c_str();
    }
    values += (values.empty() ? "" : " ") + key + "=" + one_line(value);
  }
  return run.run_id + " (" + values + ")";
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
  // The seed the config ids of derived-seed entries were computed with; a manifest of an earlier
  // version has none: its bases kept the schema's default.
  const std::string base_seed = root["base_seed"] && root["base_seed"].IsScalar() ? root["base_seed"].Scalar()
                                                                                    : find_key_spec("seed")->def;
  std::map<std::string, size_t> by_run_id;  // run_id -> position in c.runs
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
    // The ids are recomputed, not trusted: manifest.hash only says the file is what its writer
    // left, and whoever edits an entry can recompute it too.
    const std::string edited = "; the entry was edited after sweep expand froze the campaign (manifest.hash does not "
                               "stop an edit that recomputes it). Expand the sweep into a new campaign directory";
    if (const std::string problem = id_problem(e["config"], r, base_seed); !problem.empty())
      throw ConfigError(where + ": run " + std::to_string(r.index) + ": " + problem + edited);
    if (const auto [other, fresh] = by_run_id.emplace(r.run_id, c.runs.size()); !fresh)
      throw ConfigError(where + ": run " + std::to_string(r.index) + ": run_id '" + r.run_id + "' is also run " +
                        std::to_string(c.runs[other->second].index) + "'s (line " + std::to_string(c.runs[other->second].line) +
                        "): two entries would share one run file and its markers" + edited);
    c.runs.push_back(std::move(r));
  }
  c.swept_keys = read_swept_keys((fs::path(dir) / "sweep.yaml").string());
  const fs::path site = fs::path(dir) / "site.yaml";
  c.has_site = fs::is_regular_file(site);
  c.site = c.has_site ? load_site_file(site.string()) : default_local_site();
  return c;
}

RunFiles run_files(const std::string& campaign_dir, const std::string& run_id) {
  const std::string run_file = (fs::path(campaign_dir) / "runs" / (run_id + ".h5")).string();
  return {run_file,
          marker_path(run_file, MarkerKind::done),
          marker_path(run_file, MarkerKind::failed),
          marker_path(run_file, MarkerKind::running),
          marker_path(run_file, MarkerKind::preempted),
          (fs::path(campaign_dir) / "runs" / (run_id + ".lock")).string(),
          marker_path(run_file, MarkerKind::unsupported)};
}

std::vector<std::string> process_stat_fields(long pid) {
  std::vector<std::string> fields;
  if (pid <= 0) return fields;
  std::ifstream in("/proc/" + std::to_string(pid) + "/stat");
  std::string stat;
  const size_t close = std::getline(in, stat) ? stat.rfind(')') : std::string::npos;  // names may hold ' ' and ')'
  if (close == std::string::npos) return fields;
  std::istringstream words(stat.substr(close + 1));
  for (std::string word; words >> word;) fields.push_back(word);
  return fields;
}

bool process_alive(long pid) {
  if (pid <= 0 || (::kill(static_cast<pid_t>(pid), 0) != 0 && errno != EPERM)) return false;
  const std::vector<std::string> fields = process_stat_fields(pid);
  return fields.empty() || fields[0] != "Z";  // no /proc: trust kill()
}

std::optional<long long> process_start_ticks(long pid) {
  const std::vector<std::string> fields = process_stat_fields(pid);
  try {
    if (fields.size() > 19) return std::stoll(fields[19]);  // field 22
  } catch (const std::exception&) {
  }
  return std::nullopt;
}

bool attempt_alive(const RunMarker& running) {
  if (!process_alive(running.pid)) return false;
  if (running.pid_start > 0) {
    const std::optional<long long> started = process_start_ticks(running.pid);
    return !started || *started == running.pid_start;  // no /proc: trust kill()
  }
  std::string cmdline;
  try {
    cmdline = read_text_file("/proc/" + std::to_string(running.pid) + "/cmdline");
  } catch (const std::exception&) {
    return !fs::exists("/proc/self/stat");  // it ended in between; no /proc: trust kill()
  }
  const std::string program = cmdline.substr(0, cmdline.find('\0'));
  return fs::path(program).filename().string().rfind("trainscale", 0) == 0;
}

DoneCheck check_done(const RunFiles& files, const ManifestRun& run) {
  DoneCheck check;
  check.marker = read_marker_if_present(files.done);
  if (!check.marker) return check;
  const RunFileCheck file = check_run_file(files.run_file);
  check.file_missing = file.state == RunFileState::missing;
  const std::string name = "runs/" + fs::path(files.run_file).filename().string();
  if (file.state != RunFileState::complete)
    check.problem = "run file " + std::string(run_file_state_name(file.state)) + " behind DONE (" + name +
                    (file.state == RunFileState::missing ? "" : ": " + file.detail) + ")";
  else if (file.run_id != run.run_id || file.config_id != run.config_id)
    check.problem = "run file of another run behind DONE (" + name + " holds run_id '" + one_line(file.run_id) +
                    "', config_id '" + one_line(file.config_id) + "'; this run is '" + run.run_id + "', config_id '" +
                    run.config_id + "': a file copied or moved over this run's name is not its result)";
  return check;
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

const char* run_state_name(RunState s) { return kRunStates[static_cast<size_t>(s)].name; }

RunStatus run_status(const Campaign& campaign, const ManifestRun& run, const SchedulerStates& scheduler) {
  return classify_run(campaign, run, scheduler, host_name());
}

CampaignStatus campaign_status(const Campaign& campaign, const SchedulerStates& scheduler) {
  CampaignStatus st;
  const std::string host = host_name();
  for (const auto& run : campaign.runs) {
    RunStatus rs = classify_run(campaign, run, scheduler, host);
    ++(st.*kRunStates[static_cast<size_t>(rs.state)].count);
    if (rs.state == RunState::missing && rs.reason == "not submitted") ++st.not_submitted;
    st.runs.push_back(std::move(rs));
  }
  st.total = static_cast<int64_t>(campaign.runs.size());
  return st;
}

std::string status_text(const Campaign& campaign, const CampaignStatus& st) {
  std::ostringstream out;
  out << "campaign " << campaign.name << " (" << campaign.dir << "): " << st.total << " runs\n"
      << "  done " << st.done << ", diverged " << st.diverged << ", failed " << st.failed << ", preempted " << st.preempted
      << ", running " << st.running << ", pending " << st.pending << ", missing " << st.missing - st.not_submitted
      << (st.not_submitted ? ", not submitted " + std::to_string(st.not_submitted) : std::string())
      << (st.unsupported ? ", unsupported " + std::to_string(st.unsupported) : std::string()) << "\n";
  if (st.not_submitted)
    out << "  not submitted " << st.not_submitted << ": no submission of this campaign holds them yet; run trainscale sweep submit "
        << campaign.dir << "\n";
  for (const auto& r : st.runs)
    if (r.state == RunState::failed) out << "  failed  " << r.index << "  " << r.run_id << ": " << r.reason << "\n";
  for (const auto& r : st.runs)  // missing runs that say why (a run file deleted behind DONE)
    if (r.state == RunState::missing && !r.reason.empty() && r.reason != "not submitted")
      out << "  missing " << r.index << "  " << r.run_id << ": " << r.reason << "\n";
  for (const auto& r : st.runs)
    if (r.state == RunState::preempted) out << "  preempted " << r.index << "  " << r.run_id << ": " << r.reason << "\n";
  for (const auto& r : st.runs)
    if (r.state == RunState::running) out << "  running " << r.index << "  " << r.run_id << " (" << r.reason << ")\n";
  for (RunState state : {RunState::pending, RunState::unsupported})
    for (const auto& [reason, runs] : by_reason(st, state)) {
      out << "  " << run_state_name(state) << " " << runs.size() << " (" << reason << "): indices ";
      for (size_t i = 0; i < runs.size() && i < 20; ++i) out << (i ? "," : "") << runs[i]->index;
      out << (runs.size() > 20 ? ",...\n" : "\n");
    }
  for (const auto& n : st.notes) out << "  note: " << n << "\n";
  return out.str();
}

std::string status_json(const CampaignStatus& st) {
  std::ostringstream out;
  out << "{\"total\": " << st.total << ", \"done\": " << st.done << ", \"diverged\": " << st.diverged
      << ", \"failed\": " << json_runs(st, RunState::failed) << ", \"preempted\": " << json_runs(st, RunState::preempted)
      << ", \"running\": " << st.running << ", \"pending\": " << st.pending
      << ", \"pending_reasons\": " << json_runs(st, RunState::pending) << ", \"missing\": " << st.missing
      << ", \"unsupported\": " << json_runs(st, RunState::unsupported) << "}\n";
  return out.str();
}

}  // namespace ts
