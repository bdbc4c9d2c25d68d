// Job-array scripts, submission and scheduler queries (see submit.h).
#include "sweep/submit.h"

#include <yaml-cpp/yaml.h>

#include <algorithm>
#include <cstdio>
#include <cstdlib>
#include <filesystem>
#include <fstream>
#include <map>
#include <regex>
#include <set>
#include <sstream>

#include <sys/wait.h>
#include <unistd.h>

#include "core/build_info.h"
#include "core/error.h"
#include "core/file_io.h"
#include "core/host_info.h"
#include "core/names.h"
#include "core/strings.h"
#include "sweep/scheduler_values.h"
#include "sweep/shape_check.h"

namespace ts {
namespace {

namespace fs = std::filesystem;

// `text` with every "{gpus_per_node}" replaced by `gpus`.
std::string substitute_gpus_per_node(std::string text, int gpus) {
  const std::string placeholder = "{gpus_per_node}";
  for (size_t p; (p = text.find(placeholder)) != std::string::npos;) text.replace(p, placeholder.size(), std::to_string(gpus));
  return text;
}

std::string templates_dir(const Site& site) {
  if (!site.templates.empty()) return site.templates;
  if (const char* env = std::getenv("TRAINSCALE_JOBS_DIR")) return env;
  return std::string(TRAINSCALE_SOURCE_DIR) + "/jobs";
}

// Runs a shell command, returns (exit status, stdout+stderr).
std::pair<int, std::string> capture(const std::string& cmd) {
  std::string out;
  FILE* p = ::popen((cmd + " 2>&1").c_str(), "r");
  if (!p) return {-1, "popen failed"};
  char buf[4096];
  size_t n;
  while ((n = std::fread(buf, 1, sizeof buf, p)) > 0) out.append(buf, n);
  int rc = ::pclose(p);
  return {WIFEXITED(rc) ? WEXITSTATUS(rc) : -1, out};
}

// Replaces every @NAME@ of `text` from `values`; an unknown placeholder is an error.
std::string fill_template(const std::string& text, const std::map<std::string, std::string>& values,
                          const std::string& template_path) {
  std::string out;
  size_t pos = 0;
  for (size_t a, b; (a = text.find('@', pos)) != std::string::npos && (b = text.find('@', a + 1)) != std::string::npos;) {
    const std::string name = text.substr(a + 1, b - a - 1);
    const bool is_name = !name.empty() && name.find_first_not_of("ABCDEFGHIJKLMNOPQRSTUVWXYZ_") == std::string::npos;
    if (!is_name) {  // a lone '@' (e.g. in a comment): keep it
      out += text.substr(pos, a + 1 - pos);
      pos = a + 1;
      continue;
    }
    auto it = values.find(name);
    if (it == values.end())
      throw ConfigError(template_path + ": unknown placeholder @" + name + "@ (accepted: see docs/sweeps.md \"Job templates\")");
    out += text.substr(pos, a - pos) + it->second;
    pos = b + 1;
  }
  out += text.substr(pos);
  return out;
}

std::string scalar_or(const YAML::Node& n, const std::string& key, const std::string& fallback) {
  return n[key] && n[key].IsScalar() ? n[key].Scalar() : fallback;
}

int positive_int(const YAML::Node& n, const std::string& key, const std::string& where) {
  try {
    int v = n[key].as<int>();
    if (v >= 1) return v;
  } catch (const YAML::Exception&) {
  }
  throw ConfigError(where + ": resources." + key + ": expected an integer >= 1");
}

// A live `trainscale sweep submit|resubmit` process (not another process that reuses the pid).
bool local_executor_alive(long pid) {
  if (!process_alive(pid)) return false;
  std::string cmdline;
  try {
    cmdline = read_text_file("/proc/" + std::to_string(pid) + "/cmdline");
  } catch (const RuntimeError&) {
    return false;  // it ended in between
  }
  for (char& c : cmdline)
    if (c == '\0') c = ' ';
  return cmdline.find("trainscale") != std::string::npos && cmdline.find(" sweep ") != std::string::npos;
}

// What a job script does with a preempted task (exit 4, a checkpoint written).
std::string on_preempted(const std::string& scheduler, bool requeue) {
  if (!requeue)
    return "# A preempted task (exit 4) waits for `trainscale sweep resubmit CAMPAIGN --preempted` (site: requeue: false).";
  if (scheduler == "pbs")
    return "# requeue: true (#PBS -r y): PBS reruns the task after a node failure or preemption; it resumes from its checkpoint.";
  return "# requeue: true: a preempted task (exit 4) goes back to the queue and resumes from its checkpoint.\n"
         "if [ \"$rc\" -eq 4 ] && [ -n \"${SLURM_JOB_ID:-}\" ]; then scontrol requeue \"$SLURM_JOB_ID\" && rc=0; fi";
}

// Every value a script's header carries, checked once more where the script is made (the site,
// sweep and manifest readers checked them first): nothing that fails here reaches a `#SBATCH` /
// `#PBS` line, where bash quoting does not apply and a newline would end the header.
void check_header_values(const Campaign& c, const JobShape& shape, const std::string& job_name, const std::string& log_dir) {
  auto check = [&](const std::string& what, const std::string& value, const std::string& why) {
    if (!why.empty())
      throw ConfigError(c.manifest_path + ": " + what + " '" + one_line(value) + "' cannot go into a job script: " + why);
  };
  check("campaign name", c.name, name_problem(c.name));
  check("job name", job_name, name_problem(job_name));
  check("mpi entry", shape.mpi, name_problem(shape.mpi));
  if (!shape.gpu.empty()) check("gpu", shape.gpu, name_problem(shape.gpu));
  check("walltime", shape.walltime, walltime_problem(shape.walltime));
  if (!shape.mem.empty()) check("mem", shape.mem, memory_problem(shape.mem));
  if (!shape.partition.empty()) check("partition", shape.partition, scheduler_name_problem(shape.partition));
  if (!c.site.account.empty()) check("account", c.site.account, scheduler_name_problem(c.site.account));
  if (!shape.gres.empty()) check("gres", shape.gres, directive_value_problem(shape.gres, DirectiveKind::gres));
  if (!shape.constraint.empty())
    check("constraint", shape.constraint, directive_value_problem(shape.constraint, DirectiveKind::constraint));
  if (!shape.select.empty()) check("select", shape.select, directive_value_problem(shape.select, DirectiveKind::select));
  if (shell_quote(log_dir) != log_dir)
    check("campaign directory", log_dir,
          "a #SBATCH/#PBS line cannot quote it; use a path of letters, digits and _ - . / = : , + @ % only");
}

// The script's setup lines: the site's setup, module loads (MPI entry, then GPU entry) and
// exports. OMP_NUM_THREADS is the run's (the template exports it): a site value is not exported.
std::string setup_lines(const Site& site, const SiteMpi& mpi, const JobShape& shape) {
  std::vector<std::string> setup;
  for (const auto& line : site.setup) setup.push_back(line);
  for (const auto& m : mpi.modules) setup.push_back("module load " + shell_quote(m));
  if (!shape.gpu.empty())
    for (const auto& m : site.gpu.at(shape.gpu).modules) setup.push_back("module load " + shell_quote(m));
  for (const auto& [k, v] : site.env)
    setup.push_back(k == "OMP_NUM_THREADS" ? "# (the site's OMP_NUM_THREADS=" + shell_quote(v) + " is replaced by the run's threads below)"
                                           : "export " + k + "=" + shell_quote(v));
  if (setup.empty()) setup.push_back("# (no modules or environment from the site file)");
  return join(setup, "\n");
}

// Slurm's array range and optional #SBATCH lines.
void slurm_values(const Site& site, const JobShape& shape, int64_t count, int throttle,
                  std::map<std::string, std::string>& v, std::vector<std::string>& directives) {
  v["ARRAY"] = "0-" + std::to_string(count - 1) + (throttle > 0 ? "%" + std::to_string(throttle) : "");
  if (!shape.partition.empty()) directives.push_back("#SBATCH --partition=" + shape.partition);
  if (!site.account.empty()) directives.push_back("#SBATCH --account=" + site.account);
  if (!shape.gres.empty()) directives.push_back("#SBATCH --gres=" + shape.gres);
  if (!shape.constraint.empty()) directives.push_back("#SBATCH --constraint=" + shape.constraint);
  if (!shape.mem.empty()) directives.push_back("#SBATCH --mem=" + slurm_memory(shape.mem));
  // Slurm requeues a batch job whose node failed unless told not to: requeue: false means the
  // task ends failed (its job script records why) and waits for `sweep resubmit --failed`.
  directives.push_back(site.requeue ? "#SBATCH --requeue" : "#SBATCH --no-requeue");
  if (site.signal_seconds > 0) directives.push_back("#SBATCH --signal=B:USR1@" + std::to_string(site.signal_seconds));
}

// PBS's array directive (a plain job for one task), select extras and optional #PBS lines.
void pbs_values(const Site& site, const JobShape& shape, int64_t count, int throttle, std::map<std::string, std::string>& v,
                std::vector<std::string>& directives) {
  if (count > 1) {
    v["ARRAY_DIRECTIVE"] = "#PBS -J 0-" + std::to_string(count - 1) +
                           (throttle > 0 ? "\n#PBS -W max_run_subjobs=" + std::to_string(throttle) : "");
    v["SINGLE_TASK"] = "";
  } else {  // PBS Pro arrays need at least two subjobs: one task is a plain job, task 0
    v["ARRAY_DIRECTIVE"] = "# one array task: a plain job (PBS Pro arrays need at least two subjobs), task 0";
    v["SINGLE_TASK"] = "0";
  }
  v["GPU_SELECT"] = shape.gpus_per_node > 0 ? ":ngpus=" + std::to_string(shape.gpus_per_node) : "";
  if (!shape.select.empty()) v["GPU_SELECT"] += ":" + shape.select;  // e.g. :gpu_model=a100
  if (!shape.mem.empty()) v["GPU_SELECT"] += ":mem=" + pbs_memory(shape.mem);
  if (!shape.partition.empty()) directives.push_back("#PBS -q " + shape.partition);
  if (!site.account.empty()) directives.push_back("#PBS -A " + site.account);
  if (!shape.constraint.empty())
    directives.push_back("# constraint " + shape.constraint + " is a Slurm node feature; PBS resources go in the site's gpu." +
                         shape.gpu + ".select");
  if (site.requeue) directives.push_back("#PBS -r y");
}

// "6 runs, one per array task" / "2 array tasks of up to 3 runs each, one after another
// (walltime 3 x 00:10:00)" / "... of up to 4 runs each, 2 side by side (walltime 2 x 00:10:00)".
std::string tasks_summary(int64_t count, int pack, const std::string& walltime, int width) {
  if (pack <= 1) return std::to_string(count) + " runs, one per array task";
  const int rounds = (pack + width - 1) / width;
  return std::to_string(count) + " array tasks of up to " + std::to_string(pack) + " runs each, " +
         (width > 1 ? std::to_string(width) + " side by side" : std::string("one after another")) + " (walltime " +
         std::to_string(rounds) + " x " + walltime + ")";
}

// The launch command (shell words) of one run of a task laid out as `layout`. Side by side, srun
// gets a slice of its own (--exclusive: CPUs no other step of the job holds; one node; the run's
// CPUs per task); across nodes, mpirun and mpiexec get the lane's node, $LANE_HOST, which the
// script takes from the scheduler's host list (Open MPI: --host NODE:RANKS; MPICH, Intel MPI:
// -hosts NODE); on one node they place the run as they do for one run.
std::string lane_launch(const SiteMpi& mpi, const JobShape& shape, const PackLayout& layout) {
  std::vector<std::string> cmd = launch_command(mpi, shape.workers);
  if (layout.width > 1 && mpi.launcher == "srun")
    cmd.insert(cmd.begin() + 1, {"--exclusive", "--nodes=1", "--cpus-per-task=" + std::to_string(shape.cpus_per_task)});
  std::vector<std::string> words;
  for (const auto& a : cmd) words.push_back(shell_quote(a));
  if (layout.nodes > 1 && layout.width > 1 && mpi.launcher != "srun")  // expanded by the script, not quoted here
    words.insert(words.begin() + 1, shape.mpi == "openmpi" ? "--host \"${LANE_HOST}:" + std::to_string(shape.workers) + "\""
                                                           : std::string("-hosts \"$LANE_HOST\""));
  return join(words, " ");
}

// Job id (numeric part) -> index file, of one scheduler's recorded submissions.
using RecordedJobs = std::map<std::string, std::string>;

// Records what the scheduler says about array task `task` of `job` under the manifest indices
// it runs (several for a packed task, which all carry the task's indices in `pack`).
void mark_task(SchedulerStates& states, const RecordedJobs& jobs, const std::string& job, const std::string& task,
               SchedulerTask what) {
  auto it = jobs.find(job);
  if (it == jobs.end()) return;
  const auto tasks = read_index_lanes(it->second);
  int64_t t = 0;
  try {
    t = task.empty() || task == "N/A" ? 0 : std::stoll(task);
  } catch (const std::exception&) {
    return;
  }
  if (t < 0 || t >= static_cast<int64_t>(tasks.size())) return;
  const std::vector<std::vector<int64_t>>& lanes = tasks[static_cast<size_t>(t)];
  for (const auto& lane : lanes) what.pack.insert(what.pack.end(), lane.begin(), lane.end());
  if (what.pack.size() < 2) what.pack.clear();
  what.lanes = static_cast<int>(lanes.size());
  for (const auto& lane : lanes) {
    what.lane = lanes.size() > 1 ? lane : std::vector<int64_t>{};
    for (int64_t index : lane) states[index] = what;
  }
}

// squeue: one line per array task (-r), "<array job id> <task id> <state> <reason>".
void ask_slurm(const RecordedJobs& jobs, SchedulerStates& states, std::vector<std::string>* notes) {
  if (!program_on_path("squeue")) {
    notes->push_back("squeue not found on PATH: running/pending not asked from Slurm");
    return;
  }
  std::string ids;
  for (const auto& [id, f] : jobs) ids += (ids.empty() ? "" : ",") + id;
  auto [rc, out] = capture("squeue -h -r -o '%F %K %t %r' -j " + ids);
  if (rc != 0 && out.find("Invalid job id") == std::string::npos) {
    notes->push_back("squeue failed (exit " + std::to_string(rc) + "): " + out);
    return;
  }
  std::istringstream in(out);
  for (std::string line; std::getline(in, line);) {
    std::istringstream fields(line);
    std::string job, task, st, reason;
    if (!(fields >> job >> task >> st)) continue;
    std::getline(fields >> std::ws, reason);
    const bool pending = st == "PD";
    mark_task(states, jobs, job, task, {pending ? "pending" : "running", pending && reason != "None" ? reason : "", {}});
  }
  // squeue lists pending and running jobs only: every other task of a recorded array has ended
  // (campaign.h: a RUNNING marker such a task left on another host is stale).
  for (const auto& [job, index_file] : jobs)
    for (const auto& task : read_index_file(index_file))
      for (int64_t index : task) states.emplace(index, SchedulerTask{"ended", "", {}});
}

// One subjob of `qstat -f -t`: its id, job_state and comment (continuation lines joined).
struct PbsSubjob {
  std::string job, task, state, comment;
};

std::vector<PbsSubjob> parse_qstat_full(const std::string& out) {
  std::vector<PbsSubjob> jobs;
  const std::regex id(R"(^Job Id:\s*(\d+)\[(\d+)\])");
  std::string* last_value = nullptr;
  std::istringstream in(out);
  for (std::string line; std::getline(in, line);) {
    std::smatch m;
    if (line.rfind("Job Id:", 0) == 0) {
      last_value = nullptr;
      if (std::regex_search(line, m, id)) jobs.push_back({m[1], m[2], "", ""});
      else jobs.push_back({"", "", "", ""});  // a plain job or the array itself (123[]): not a subjob
      continue;
    }
    if (jobs.empty()) continue;
    if (!line.empty() && line[0] == '\t' && last_value) {  // qstat wraps long values anywhere, mid-word too
      *last_value += line.substr(1);
      continue;
    }
    const size_t eq = line.find(" = ");
    if (eq == std::string::npos) continue;
    const std::string key = trim(line.substr(0, eq));
    last_value = key == "job_state" ? &jobs.back().state : key == "comment" ? &jobs.back().comment : nullptr;
    if (last_value) *last_value = line.substr(eq + 3);
  }
  for (auto& j : jobs) {
    j.state = trim(j.state);
    j.comment = trim(j.comment);
  }
  return jobs;
}

// qstat -f -t: subjobs queued (Q, H, W) are pending with their comment; R, E, B are running.
void ask_pbs(const RecordedJobs& jobs, SchedulerStates& states, std::vector<std::string>* notes) {
  if (!program_on_path("qstat")) {
    notes->push_back("qstat not found on PATH: running/pending not asked from PBS");
    return;
  }
  std::string ids;
  for (const auto& [id, f] : jobs) ids += " " + id + "[]";
  auto [rc, out] = capture("qstat -f -t" + ids);
  for (const auto& j : parse_qstat_full(out)) {
    if (j.job.empty()) continue;
    if (j.state == "Q" || j.state == "H" || j.state == "W") mark_task(states, jobs, j.job, j.task, {"pending", j.comment, {}});
    else if (j.state == "R" || j.state == "E" || j.state == "B") mark_task(states, jobs, j.job, j.task, {"running", "", {}});
  }
}

}  // namespace

std::vector<std::vector<int64_t>> pack_indices(const std::vector<int64_t>& indices, int pack) {
  if (pack < 1 || pack > kMaxPack)
    throw ConfigError("--pack: " + std::to_string(pack) + " is out of range; accepted: 1 ... " + std::to_string(kMaxPack) +
                      " runs per array task");
  std::vector<std::vector<int64_t>> tasks;
  for (size_t i = 0; i < indices.size(); ++i) {
    if (i % static_cast<size_t>(pack) == 0) tasks.emplace_back();
    tasks.back().push_back(indices[i]);
  }
  return tasks;
}

std::string index_file_text(const std::vector<std::vector<int64_t>>& tasks, int width) {
  std::string text;
  for (const auto& task : tasks) {
    const size_t lanes = std::max<size_t>(1, std::min(task.size(), static_cast<size_t>(std::max(1, width))));
    for (size_t lane = 0; lane < lanes; ++lane) {  // lane j: the task's runs j, j + lanes, ...
      text += lane ? " | " : "";
      for (size_t k = lane; k < task.size(); k += lanes) text += (k > lane ? " " : "") + std::to_string(task[k]);
    }
    text += "\n";
  }
  return text;
}

std::vector<std::vector<std::vector<int64_t>>> read_index_lanes(const std::string& path) {
  std::vector<std::vector<std::vector<int64_t>>> tasks;
  std::ifstream in(path);
  int line_number = 0;
  for (std::string line; std::getline(in, line);) {
    ++line_number;
    if (trim(line).empty()) continue;
    std::istringstream words(line);
    std::vector<std::vector<int64_t>> lanes(1);
    for (std::string word; words >> word;) {
      if (word == "|") {
        lanes.emplace_back();
        continue;
      }
      if (word.find_first_not_of("0123456789") != std::string::npos || word.size() > 18)
        throw ConfigError(path + ":" + std::to_string(line_number) + ": '" + one_line(word) +
                          "' is not a manifest index; an index file holds the indices of one array task per line "
                          "(its lanes, which run side by side, separated by ' | ')");
      lanes.back().push_back(std::stoll(word));
    }
    tasks.push_back(std::move(lanes));
  }
  return tasks;
}

std::vector<std::vector<int64_t>> read_index_file(const std::string& path) {
  std::vector<std::vector<int64_t>> tasks;
  for (const auto& lanes : read_index_lanes(path)) {
    tasks.emplace_back();
    for (const auto& lane : lanes) tasks.back().insert(tasks.back().end(), lane.begin(), lane.end());
  }
  return tasks;
}

bool program_on_path(const std::string& program) {
  if (program.find('/') != std::string::npos) return ::access(program.c_str(), X_OK) == 0;  // a path, not a name
  const char* path = std::getenv("PATH");
  std::istringstream in(path ? path : "");
  std::string dir;
  while (std::getline(in, dir, ':'))
    if (!dir.empty() && ::access((fs::path(dir) / program).c_str(), X_OK) == 0) return true;
  return false;
}

std::string JobShape::label() const {
  return "workers=" + std::to_string(workers) + " nodes=" + std::to_string(nodes) + " cpus=" + std::to_string(cpus_per_task) +
         (threads != cpus_per_task ? " threads=" + std::to_string(threads) : "") + " gpus=" + std::to_string(gpus_per_node) + (gpu.empty() ? "" : " gpu=" + gpu) + " partition=" + (partition.empty() ? "-" : partition) +
         " walltime=" + walltime + (mem.empty() ? "" : " mem=" + mem) + " mpi=" + mpi;
}

std::vector<ShapeGroup> group_by_shape(const Campaign& c, const std::vector<int64_t>& indices) {
  const Site& site = c.site;
  const YAML::Node res = YAML::Load(c.resources_yaml);
  const std::string where = c.manifest_path + ": resources";
  if (res.IsMap())  // checked when the sweep was read; again here, for a manifest edited by hand
    for (const auto& kv : res)
      if (const std::string why = resource_value_problem(kv.first.Scalar(), kv.second.IsScalar() ? kv.second.Scalar() : "");
          !why.empty())
        throw ConfigError(where + ": key '" + one_line(kv.first.Scalar()) + "': " + why);

  std::vector<int64_t> all = indices;
  if (all.empty())
    for (const auto& r : c.runs) all.push_back(r.index);
  std::vector<ShapeGroup> groups;
  for (int64_t i : all) {
    if (i < 0 || i >= static_cast<int64_t>(c.runs.size()))
      throw ConfigError(c.manifest_path + ": no run with index " + std::to_string(i));
    const ManifestRun& run = c.runs[i];
    const YAML::Node cfg = YAML::Load(run.config_yaml);
    const std::string run_where = c.manifest_path + ":" + std::to_string(run.line) + " (run " + run.run_id + ")";
    const std::string gpu = scalar_or(cfg, "gpu", "none");
    const std::string flavor = scalar_or(cfg, "mpi_flavor", "any");
    const std::string storage = cfg["dataset"] ? scalar_or(cfg["dataset"], "storage", "local") : "local";
    const std::string problem = site_check_run(site, gpu, flavor, storage);
    if (!problem.empty()) throw ConfigError(run_where + ": " + problem);

    JobShape s;
    s.workers = std::max(1, std::stoi(scalar_or(cfg, "workers", "1")));
    // async_ps runs its parameter servers on ranks of their own (docs/async.md).
    if (cfg["dist"] && scalar_or(cfg["dist"], "strategy", "sync") == "async_ps")
      s.workers += std::max(1, std::stoi(scalar_or(cfg["dist"], "servers", "1")));
    s.threads = std::max(1, std::stoi(scalar_or(cfg, "threads", "1")));
    if (cfg["ranks"] && cfg["ranks"]["threads"])  // every rank's threads fit a task
      for (const std::string& t : split(cfg["ranks"]["threads"].as<std::string>(), ','))
        s.threads = std::max(s.threads, std::stoi(t));
    s.cpus_per_task = res["cpus_per_worker"] ? positive_int(res, "cpus_per_worker", where) : s.threads;
    s.walltime = scalar_or(res, "walltime", site.walltime);
    s.mem = scalar_or(res, "mem", site.mem);
    s.partition = scalar_or(res, "partition", site.partition);
    int per_node = res["workers_per_node"] ? positive_int(res, "workers_per_node", where)
                                           : (site.workers_per_node > 0 ? site.workers_per_node : s.workers);
    if (gpu != "none") {
      // One worker per GPU: a node takes gpus_per_node workers, and asks for as many GPUs as
      // it runs workers (all of them when the run spans several nodes).
      const SiteGpu& g = site.gpu.at(gpu);
      per_node = g.gpus_per_node;
      s.gpu = gpu;
      s.gpus_per_node = std::min(s.workers, g.gpus_per_node);
      if (!g.partition.empty()) s.partition = g.partition;
      s.gres = substitute_gpus_per_node(g.gres, s.gpus_per_node);
      s.constraint = g.constraint;
      s.select = substitute_gpus_per_node(g.select, s.gpus_per_node);
    }
    s.nodes = (s.workers + per_node - 1) / per_node;
    s.tasks_per_node = std::min(s.workers, per_node);
    // The entry name: the flavor itself, or the default entry for `any`.
    if (flavor != "any") s.mpi = flavor;
    else s.mpi = !site.mpi_default.empty() ? site.mpi_default : (site.mpi_order.empty() ? "" : site.mpi_order.front());

    auto it = std::find_if(groups.begin(), groups.end(), [&](const ShapeGroup& g) { return g.shape == s; });
    if (it == groups.end()) groups.push_back({s, {i}});
    else it->indices.push_back(i);
  }
  for (auto& g : groups) std::sort(g.indices.begin(), g.indices.end());
  return groups;
}

SiteMpi shape_mpi(const Site& site, const JobShape& shape) {
  SiteMpi mpi = site.mpi.at(shape.mpi);
  if (!shape.gpu.empty() && !site.gpu.at(shape.gpu).binary.empty()) mpi.binary = site.gpu.at(shape.gpu).binary;
  return mpi;
}

// The binary a site MPI entry names, absolute ("" -> the running trainscale; relative -> from
// the current directory).
static std::string resolve_binary(const SiteMpi& mpi) {
  if (mpi.binary.empty()) {
    std::error_code ec;
    fs::path self = fs::read_symlink("/proc/self/exe", ec);
    if (ec) throw RuntimeError("cannot find the running trainscale binary (/proc/self/exe): " + ec.message() +
                               "; name `binary` in the site's mpi entry");
    return self.string();
  }
  fs::path p(mpi.binary);
  return (p.is_absolute() ? p : fs::absolute(p)).lexically_normal().string();
}

std::vector<std::string> launch_command(const SiteMpi& mpi, int workers) {
  std::vector<std::string> cmd;
  const std::string w = std::to_string(workers);
  const std::string program = mpi.launcher_command.empty() ? mpi.launcher : mpi.launcher_command;
  if (mpi.launcher == "mpirun") cmd = {program, "-np", w};
  else if (mpi.launcher == "srun") cmd = {program, "--mpi=" + mpi.srun_mpi, "-n", w};
  else cmd = {program, "-n", w};
  for (const auto& a : mpi.launcher_args) cmd.push_back(a);
  cmd.push_back(resolve_binary(mpi));
  return cmd;
}

std::string render_job_script(const Campaign& c, const std::string& scheduler, const JobShape& shape,
                              const std::string& job_name, const std::string& index_file, int64_t count, int throttle,
                              int pack) {
  const Site& site = c.site;
  const std::string tpl_path = templates_dir(site) + "/" + (scheduler == "slurm" ? "slurm.sh.in" : "pbs.sh.in");
  if (!fs::is_regular_file(tpl_path))
    throw ConfigError(tpl_path + ": job template not found; set `templates:` in the site file or TRAINSCALE_JOBS_DIR to the jobs/ directory");
  const std::string tpl = read_text_file(tpl_path);
  const SiteMpi mpi = shape_mpi(site, shape);
  const std::string campaign_dir = fs::absolute(c.dir).lexically_normal().string();
  check_header_values(c, shape, job_name, campaign_dir + "/logs");
  pack_indices({}, pack);  // the range check
  // The runs of a lane one after another; `width` lanes at once, `per_node` on each node.
  const PackLayout layout = pack_layout(site, shape, pack);
  const int width = layout.width, per_node = layout.per_node;
  const std::string walltime = scaled_walltime(shape.walltime, (pack + width - 1) / width);

  std::map<std::string, std::string> v;
  v["CAMPAIGN"] = c.name;
  v["SHAPE"] = shape.label();
  v["COUNT"] = std::to_string(count);
  v["TASKS_SUMMARY"] = tasks_summary(count, pack, shape.walltime, width);
  v["PACK"] = std::to_string(pack);
  v["JOB_NAME"] = job_name;
  v["NODES"] = std::to_string(layout.nodes);
  v["TASKS"] = std::to_string(shape.workers * width);
  v["TASKS_PER_NODE"] = std::to_string(shape.tasks_per_node * per_node);
  v["CPUS_PER_TASK"] = std::to_string(shape.cpus_per_task);
  v["THREADS"] = std::to_string(shape.threads);
  v["NCPUS_PER_NODE"] = std::to_string(shape.tasks_per_node * shape.cpus_per_task * per_node);
  v["LANES_PER_NODE"] = std::to_string(per_node);
  v["WALLTIME"] = scheduler == "slurm" ? walltime : pbs_walltime(walltime);
  v["LOG_DIR"] = shell_quote(campaign_dir + "/logs");
  v["CAMPAIGN_DIR"] = shell_quote(campaign_dir);
  v["INDEX_FILE"] = shell_quote(index_file);
  v["SETUP"] = setup_lines(site, mpi, shape);
  v["LAUNCH"] = lane_launch(mpi, shape, layout);
  v["TRAINSCALE"] = shell_quote(resolve_binary(mpi));
  std::vector<std::string> directives;
  if (scheduler == "slurm") slurm_values(site, shape, count, throttle, v, directives);
  else pbs_values(site, shape, count, throttle, v, directives);
  v["ON_PREEMPTED"] = on_preempted(scheduler, site.requeue);
  v["DIRECTIVES"] = directives.empty() ? "# (no partition, account, gres or constraint)" : join(directives, "\n");
  return fill_template(tpl, v, tpl_path);
}

std::vector<JobScript> write_job_scripts(const Campaign& c, const std::string& scheduler, const std::vector<ShapeGroup>& groups,
                                         int throttle, const std::string& tag, int pack) {
  const fs::path jobs = fs::absolute(campaign_jobs_dir(c.dir)).lexically_normal();
  std::error_code ec;
  fs::create_directories(jobs, ec);
  fs::create_directories(fs::path(campaign_logs_dir(c.dir)), ec);
  if (ec) throw RuntimeError(jobs.string() + ": cannot create: " + ec.message());
  const std::string ext = scheduler == "slurm" ? ".slurm" : ".pbs";
  std::vector<JobScript> out;
  for (size_t g = 0; g < groups.size(); ++g) {
    const auto tasks = pack_indices(groups[g].indices, pack);
    const int64_t max = std::max<int64_t>(1, c.site.max_array_size);  // array tasks per script
    const int64_t parts = (static_cast<int64_t>(tasks.size()) + max - 1) / max;
    for (int64_t p = 0; p < parts; ++p) {
      const auto first = tasks.begin() + p * max;
      const std::vector<std::vector<int64_t>> part(first, first + std::min<int64_t>(max, tasks.end() - first));
      std::string stem = tag + "s" + std::to_string(g) + (parts > 1 ? "-p" + std::to_string(p) : "");
      JobScript js;
      js.scheduler = scheduler;
      js.name = "ts-" + c.name + "-" + stem;
      js.index_file = (jobs / (stem + ".idx")).string();
      js.script = (jobs / (stem + ext)).string();
      js.shape = groups[g].shape.label();
      js.count = static_cast<int64_t>(part.size());
      js.pack = pack;
      js.width = pack_layout(c.site, groups[g].shape, pack).width;
      for (const auto& task : part) js.runs += static_cast<int64_t>(task.size());
      write_file_atomically(js.index_file, index_file_text(part, js.width));
      write_file_atomically(js.script,
                            render_job_script(c, scheduler, groups[g].shape, js.name, js.index_file, js.count, throttle, pack));
      fs::permissions(js.script, fs::perms::owner_exec | fs::perms::group_exec, fs::perm_options::add, ec);
      out.push_back(js);
    }
  }
  return out;
}

std::string submit_job_script(const JobScript& job) {
  const std::string program = job.scheduler == "slurm" ? "sbatch" : "qsub";
  if (!program_on_path(program))
    throw RuntimeError(program + " not found on PATH: --scheduler " + job.scheduler + " needs the " + job.scheduler +
                       " client commands (run on a login node, or use --dry-run to write the scripts only)");
  const std::string cmd = job.scheduler == "slurm" ? "sbatch --parsable " + shell_quote(job.script) : "qsub " + shell_quote(job.script);
  auto [rc, out] = capture(cmd);
  while (!out.empty() && (out.back() == '\n' || out.back() == ' ')) out.pop_back();
  if (rc != 0) throw RuntimeError(cmd + " failed (exit " + std::to_string(rc) + "): " + out);
  // sbatch --parsable: "<jobid>[;<cluster>]"; qsub: "<jobid>.<server>" (possibly after warnings).
  std::string last = out.substr(out.find_last_of('\n') == std::string::npos ? 0 : out.find_last_of('\n') + 1);
  if (job.scheduler == "slurm") last = last.substr(0, last.find(';'));
  if (last.empty()) throw RuntimeError(cmd + " printed no job id: " + out);
  return last;
}

void record_submissions(const std::string& dir, const std::vector<SubmissionRecord>& records) {
  std::vector<SubmissionRecord> all = read_submissions(dir);
  all.insert(all.end(), records.begin(), records.end());
  YAML::Emitter em;
  em << YAML::BeginSeq;
  for (const auto& r : all) {
    em << YAML::BeginMap << YAML::Key << "scheduler" << YAML::Value << r.scheduler;
    if (!r.job_id.empty()) em << YAML::Key << "job_id" << YAML::Value << YAML::DoubleQuoted << r.job_id;
    if (r.pid) em << YAML::Key << "pid" << YAML::Value << r.pid;
    if (!r.host.empty()) em << YAML::Key << "host" << YAML::Value << r.host;
    if (!r.script.empty()) em << YAML::Key << "script" << YAML::Value << r.script;
    em << YAML::Key << "index_file" << YAML::Value << r.index_file << YAML::Key << "count" << YAML::Value << r.count << YAML::EndMap;
  }
  em << YAML::EndSeq;
  std::error_code ec;
  fs::create_directories(campaign_jobs_dir(dir), ec);
  write_file_atomically(campaign_jobs_dir(dir) + "/submissions.yaml", std::string(em.c_str()) + "\n");
}

std::vector<SubmissionRecord> read_submissions(const std::string& dir) {
  const std::string path = campaign_jobs_dir(dir) + "/submissions.yaml";
  std::vector<SubmissionRecord> out;
  if (!fs::is_regular_file(path)) return out;
  YAML::Node root;
  try {
    root = YAML::LoadFile(path);
  } catch (const YAML::Exception& e) {
    throw ConfigError(path + ":" + std::to_string(e.mark.line + 1) + ": not valid YAML: " + e.msg);
  }
  if (!root.IsSequence()) return out;
  for (const auto& n : root) {
    SubmissionRecord r;
    r.scheduler = scalar_or(n, "scheduler", "");
    r.job_id = scalar_or(n, "job_id", "");
    r.host = scalar_or(n, "host", "");
    r.script = scalar_or(n, "script", "");
    r.index_file = scalar_or(n, "index_file", "");
    r.count = std::stoll(scalar_or(n, "count", "0"));
    r.pid = std::stol(scalar_or(n, "pid", "0"));
    out.push_back(r);
  }
  return out;
}

std::string next_resubmit_tag(const std::string& dir) {
  std::vector<std::string> names;  // of jobs/ (none when it is missing)
  std::error_code ec;
  for (const auto& e : fs::directory_iterator(campaign_jobs_dir(dir), ec)) names.push_back(e.path().filename().string());
  for (int n = 1;; ++n) {
    const std::string tag = "resubmit" + std::to_string(n) + "-";
    if (std::none_of(names.begin(), names.end(), [&](const std::string& name) { return name.rfind(tag, 0) == 0; })) return tag;
  }
}

SchedulerStates query_scheduler(const Campaign& c, std::vector<std::string>* notes) {
  SchedulerStates states;
  RecordedJobs slurm_jobs, pbs_jobs;
  std::set<int64_t> submitted;  // the indices some recorded submission holds
  for (const auto& s : read_submissions(c.dir)) {
    const std::string id = s.job_id.substr(0, s.job_id.find_first_not_of("0123456789"));
    if (s.scheduler == "slurm") slurm_jobs[id] = s.index_file;
    if (s.scheduler == "pbs") pbs_jobs[id] = s.index_file;
    const auto tasks = read_index_file(s.index_file);
    for (const auto& task : tasks) submitted.insert(task.begin(), task.end());
    const bool local_executor = s.scheduler == "local" || s.scheduler == "simulate";
    if (local_executor && s.host == host_name() && local_executor_alive(s.pid)) {
      // A live local executor: its queued runs without a marker are pending.
      for (const auto& task : tasks)
        for (int64_t i : task)
          states.emplace(i, SchedulerTask{"pending", "queued by the local executor (pid " + std::to_string(s.pid) + ")", {}});
    }
  }
  if (!slurm_jobs.empty()) ask_slurm(slurm_jobs, states, notes);
  if (!pbs_jobs.empty()) ask_pbs(pbs_jobs, states, notes);
  // Runs that no recorded submission holds: missing because nobody submitted them yet.
  for (const auto& run : c.runs)
    if (!submitted.count(run.index)) states.emplace(run.index, SchedulerTask{"not submitted", "", {}});
  return states;
}

}  // namespace ts
