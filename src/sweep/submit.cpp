// Job-array scripts, submission, scheduler queries and the local executor (see submit.h).
#include "sweep/submit.h"

#include <yaml-cpp/yaml.h>

#include <algorithm>
#include <chrono>
#include <cmath>
#include <cstdio>
#include <cstdlib>
#include <filesystem>
#include <fstream>
#include <map>
#include <ostream>
#include <regex>
#include <set>
#include <sstream>

#include <cerrno>
#include <cstring>

#include <fcntl.h>
#include <sys/wait.h>
#include <unistd.h>

#include "core/build_info.h"
#include "core/error.h"
#include "core/file_io.h"
#include "core/host_info.h"
#include "core/run_marker.h"
#include "core/strings.h"

namespace ts {
namespace {

namespace fs = std::filesystem;

int ceil_div(int a, int b) { return (a + b - 1) / b; }

// `text` with every "{gpus_per_node}" replaced by `gpus`.
std::string substitute_gpus_per_node(std::string text, int gpus) {
  const std::string placeholder = "{gpus_per_node}";
  for (size_t p; (p = text.find(placeholder)) != std::string::npos;) text.replace(p, placeholder.size(), std::to_string(gpus));
  return text;
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

bool on_path(const std::string& program) {
  const char* path = std::getenv("PATH");
  std::istringstream in(path ? path : "");
  std::string dir;
  while (std::getline(in, dir, ':'))
    if (!dir.empty() && ::access((fs::path(dir) / program).c_str(), X_OK) == 0) return true;
  return false;
}

std::string templates_dir(const Site& site) {
  if (!site.templates.empty()) return site.templates;
  if (const char* env = std::getenv("TRAINSCALE_JOBS_DIR")) return env;
  return std::string(TRAINSCALE_SOURCE_DIR) + "/jobs";
}

// Replaces every @NAME@ of `text` from `values`; an unknown placeholder is an error.
std::string fill_template(const std::string& text, const std::map<std::string, std::string>& values,
                          const std::string& template_path) {
  std::string out;
  size_t pos = 0;
  while (true) {
    size_t a = text.find('@', pos);
    if (a == std::string::npos) break;
    size_t b = text.find('@', a + 1);
    if (b == std::string::npos) break;
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

// Lines of an index file -> manifest indices.
std::vector<int64_t> read_index_file(const std::string& path) {
  std::vector<int64_t> out;
  std::ifstream in(path);
  std::string line;
  while (std::getline(in, line))
    if (!line.empty()) out.push_back(std::stoll(line));
  return out;
}

std::string seconds_text(double s) {
  if (!std::isfinite(s)) return "?";
  long t = std::lround(s);
  char buf[32];
  if (t >= 3600) std::snprintf(buf, sizeof buf, "%ldh%02ldm", t / 3600, (t / 60) % 60);
  else if (t >= 60) std::snprintf(buf, sizeof buf, "%ldm%02lds", t / 60, t % 60);
  else std::snprintf(buf, sizeof buf, "%lds", t);
  return buf;
}

// A live `trainscale sweep submit|resubmit` process (not another process that reuses the pid).
bool local_executor_alive(long pid) {
  if (pid <= 0 || ::kill(static_cast<pid_t>(pid), 0) != 0) return false;
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

}  // namespace

std::string JobShape::label() const {
  return "workers=" + std::to_string(workers) + " nodes=" + std::to_string(nodes) + " cpus=" + std::to_string(cpus_per_task) +
         " gpus=" + std::to_string(gpus_per_node) + (gpu.empty() ? "" : " gpu=" + gpu) + " partition=" + (partition.empty() ? "-" : partition) +
         " walltime=" + walltime + (mem.empty() ? "" : " mem=" + mem) + " mpi=" + mpi;
}

std::vector<ShapeGroup> group_by_shape(const Campaign& c, const std::vector<int64_t>& indices) {
  const Site& site = c.site;
  const YAML::Node res = YAML::Load(c.resources_yaml);
  const std::string where = c.manifest_path + ": resources";
  static const std::vector<std::string> accepted = {"walltime", "cpus_per_worker", "workers_per_node", "partition", "mem"};
  if (res.IsMap())
    for (const auto& kv : res)
      if (std::find(accepted.begin(), accepted.end(), kv.first.Scalar()) == accepted.end())
        throw ConfigError(where + ": unknown key '" + kv.first.Scalar() + "'; accepted: " + join(accepted, ", "));

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
    s.cpus_per_task = res["cpus_per_worker"] ? positive_int(res, "cpus_per_worker", where)
                                             : std::max(1, std::stoi(scalar_or(cfg, "threads", "1")));
    s.walltime = scalar_or(res, "walltime", site.walltime);
    s.mem = scalar_or(res, "mem", "");
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
    s.nodes = ceil_div(s.workers, per_node);
    s.tasks_per_node = std::min(s.workers, per_node);
    // The entry name: the flavor itself, or the default entry for `any`.
    if (flavor != "any") s.mpi = flavor;
    else s.mpi = !site.mpi_default.empty() ? site.mpi_default : site.mpi_order.front();

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

std::string resolve_binary(const SiteMpi& mpi) {
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
                              const std::string& job_name, const std::string& index_file, int64_t count, int throttle) {
  const Site& site = c.site;
  const std::string tpl_path = templates_dir(site) + "/" + (scheduler == "slurm" ? "slurm.sh.in" : "pbs.sh.in");
  if (!fs::is_regular_file(tpl_path))
    throw ConfigError(tpl_path + ": job template not found; set `templates:` in the site file or TRAINSCALE_JOBS_DIR to the jobs/ directory");
  const std::string tpl = read_text_file(tpl_path);
  const SiteMpi mpi = shape_mpi(site, shape);
  const std::string campaign_dir = fs::absolute(c.dir).lexically_normal().string();

  std::vector<std::string> launch;
  for (const auto& a : launch_command(mpi, shape.workers)) launch.push_back(shell_quote(a));
  std::vector<std::string> setup;
  for (const auto& line : site.setup) setup.push_back(line);
  for (const auto& m : mpi.modules) setup.push_back("module load " + shell_quote(m));
  if (!shape.gpu.empty())
    for (const auto& m : site.gpu.at(shape.gpu).modules) setup.push_back("module load " + shell_quote(m));
  for (const auto& [k, v] : site.env) setup.push_back("export " + k + "=" + shell_quote(v));
  if (setup.empty()) setup.push_back("# (no modules or environment from the site file)");

  std::map<std::string, std::string> v;
  v["CAMPAIGN"] = c.name;
  v["SHAPE"] = shape.label();
  v["COUNT"] = std::to_string(count);
  v["JOB_NAME"] = job_name;
  v["NODES"] = std::to_string(shape.nodes);
  v["TASKS"] = std::to_string(shape.workers);
  v["TASKS_PER_NODE"] = std::to_string(shape.tasks_per_node);
  v["CPUS_PER_TASK"] = std::to_string(shape.cpus_per_task);
  v["NCPUS_PER_NODE"] = std::to_string(shape.tasks_per_node * shape.cpus_per_task);
  v["WALLTIME"] = shape.walltime;
  v["LOG_DIR"] = shell_quote(campaign_dir + "/logs");
  v["CAMPAIGN_DIR"] = shell_quote(campaign_dir);
  v["INDEX_FILE"] = shell_quote(index_file);
  v["SETUP"] = join(setup, "\n");
  v["LAUNCH"] = join(launch, " ");
  std::vector<std::string> directives;
  if (scheduler == "slurm") {
    v["ARRAY"] = "0-" + std::to_string(count - 1) + (throttle > 0 ? "%" + std::to_string(throttle) : "");
    if (!shape.partition.empty()) directives.push_back("#SBATCH --partition=" + shape.partition);
    if (!site.account.empty()) directives.push_back("#SBATCH --account=" + site.account);
    if (!shape.gres.empty()) directives.push_back("#SBATCH --gres=" + shape.gres);
    if (!shape.constraint.empty()) directives.push_back("#SBATCH --constraint=" + shape.constraint);
    if (!shape.mem.empty()) directives.push_back("#SBATCH --mem=" + shape.mem);
  } else {
    if (count > 1) {
      v["ARRAY_DIRECTIVE"] = "#PBS -J 0-" + std::to_string(count - 1) +
                             (throttle > 0 ? "\n#PBS -W max_run_subjobs=" + std::to_string(throttle) : "");
      v["SINGLE_TASK"] = "";
    } else {  // PBS Pro arrays need at least two subjobs: one run is a plain job, task 0
      v["ARRAY_DIRECTIVE"] = "# one run: a plain job (PBS Pro arrays need at least two subjobs), task 0";
      v["SINGLE_TASK"] = "0";
    }
    v["GPU_SELECT"] = shape.gpus_per_node > 0 ? ":ngpus=" + std::to_string(shape.gpus_per_node) : "";
    if (!shape.select.empty()) v["GPU_SELECT"] += ":" + shape.select;  // e.g. :gpu_model=a100
    if (!shape.mem.empty()) v["GPU_SELECT"] += ":mem=" + shape.mem;
    if (!shape.partition.empty()) directives.push_back("#PBS -q " + shape.partition);
    if (!site.account.empty()) directives.push_back("#PBS -A " + site.account);
    if (!shape.constraint.empty())
      directives.push_back("# constraint " + shape.constraint + " is a Slurm node feature; PBS resources go in the site's gpu." +
                           shape.gpu + ".select");
  }
  v["DIRECTIVES"] = directives.empty() ? "# (no partition, account, gres or constraint)" : join(directives, "\n");
  return fill_template(tpl, v, tpl_path);
}

std::vector<JobScript> write_job_scripts(const Campaign& c, const std::string& scheduler, const std::vector<ShapeGroup>& groups,
                                         int throttle, const std::string& tag) {
  const fs::path jobs = fs::absolute(campaign_jobs_dir(c.dir)).lexically_normal();
  std::error_code ec;
  fs::create_directories(jobs, ec);
  fs::create_directories(fs::path(campaign_logs_dir(c.dir)), ec);
  if (ec) throw RuntimeError(jobs.string() + ": cannot create: " + ec.message());
  const std::string ext = scheduler == "slurm" ? ".slurm" : ".pbs";
  std::vector<JobScript> out;
  for (size_t g = 0; g < groups.size(); ++g) {
    const auto& idx = groups[g].indices;
    const int64_t max = std::max<int64_t>(1, c.site.max_array_size);
    const int64_t parts = (static_cast<int64_t>(idx.size()) + max - 1) / max;
    for (int64_t p = 0; p < parts; ++p) {
      const int64_t first = p * max;
      const int64_t count = std::min<int64_t>(max, static_cast<int64_t>(idx.size()) - first);
      std::string stem = tag + "s" + std::to_string(g) + (parts > 1 ? "-p" + std::to_string(p) : "");
      JobScript js;
      js.scheduler = scheduler;
      js.name = "ts-" + c.name + "-" + stem;
      js.index_file = (jobs / (stem + ".idx")).string();
      js.script = (jobs / (stem + ext)).string();
      js.shape = groups[g].shape.label();
      js.count = count;
      std::string lines;
      for (int64_t k = first; k < first + count; ++k) lines += std::to_string(idx[k]) + "\n";
      write_file_atomically(js.index_file, lines);
      write_file_atomically(js.script, render_job_script(c, scheduler, groups[g].shape, js.name, js.index_file, count, throttle));
      fs::permissions(js.script, fs::perms::owner_exec | fs::perms::group_exec, fs::perm_options::add, ec);
      out.push_back(js);
    }
  }
  return out;
}

std::string submit_job_script(const JobScript& job) {
  const std::string program = job.scheduler == "slurm" ? "sbatch" : "qsub";
  if (!on_path(program))
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
  int n = 1;
  while (true) {
    const std::string tag = "resubmit" + std::to_string(n) + "-";
    bool used = false;
    std::error_code ec;
    if (fs::is_directory(campaign_jobs_dir(dir)))
      for (const auto& e : fs::directory_iterator(campaign_jobs_dir(dir), ec))
        used = used || e.path().filename().string().rfind(tag, 0) == 0;
    if (!used) return tag;
    ++n;
  }
}

SchedulerStates query_scheduler(const Campaign& c, std::vector<std::string>* notes) {
  SchedulerStates states;
  const auto subs = read_submissions(c.dir);
  // Job id (numeric part) -> index file, per scheduler.
  std::map<std::string, std::string> slurm_jobs, pbs_jobs;
  for (const auto& s : subs) {
    const std::string id = s.job_id.substr(0, s.job_id.find_first_not_of("0123456789"));
    if (s.scheduler == "slurm") slurm_jobs[id] = s.index_file;
    if (s.scheduler == "pbs") pbs_jobs[id] = s.index_file;
    if (s.scheduler == "local" && s.host == host_name() && local_executor_alive(s.pid)) {
      // A live local executor: its queued runs without a marker are pending.
      for (int64_t i : read_index_file(s.index_file)) states.emplace(i, "pending");
    }
  }
  auto mark = [&](const std::map<std::string, std::string>& jobs, const std::string& job, const std::string& task,
                  const std::string& state) {
    auto it = jobs.find(job);
    if (it == jobs.end()) return;
    const auto idx = read_index_file(it->second);
    int64_t t = 0;
    try {
      t = task.empty() || task == "N/A" ? 0 : std::stoll(task);
    } catch (const std::exception&) {
      return;
    }
    if (t >= 0 && t < static_cast<int64_t>(idx.size())) states[idx[t]] = state;
  };
  if (!slurm_jobs.empty()) {
    if (!on_path("squeue")) {
      notes->push_back("squeue not found on PATH: running/pending not asked from Slurm");
    } else {
      std::string ids;
      for (const auto& [id, f] : slurm_jobs) ids += (ids.empty() ? "" : ",") + id;
      // One line per array task (-r): "<array job id> <task id> <state>".
      auto [rc, out] = capture("squeue -h -r -o '%F %K %t' -j " + ids);
      if (rc != 0 && out.find("Invalid job id") == std::string::npos) {
        notes->push_back("squeue failed (exit " + std::to_string(rc) + "): " + out);
      } else {
        std::istringstream in(out);
        std::string job, task, st;
        while (in >> job >> task >> st) mark(slurm_jobs, job, task, st == "PD" ? "pending" : "running");
      }
    }
  }
  if (!pbs_jobs.empty()) {
    if (!on_path("qstat")) {
      notes->push_back("qstat not found on PATH: running/pending not asked from PBS");
    } else {
      std::string ids;
      for (const auto& [id, f] : pbs_jobs) ids += " " + id + "[]";
      auto [rc, out] = capture("qstat -t" + ids);
      std::istringstream in(out);
      std::string line;
      const std::regex sub(R"(^(\d+)\[(\d+)\]\S*\s+\S+\s+\S+\s+\S+\s+(\w)\s)");
      while (std::getline(in, line)) {
        std::smatch m;
        if (std::regex_search(line, m, sub)) {
          const std::string s = m[3];
          if (s == "Q" || s == "H" || s == "W") mark(pbs_jobs, m[1], m[2], "pending");
          else if (s == "R" || s == "E" || s == "B") mark(pbs_jobs, m[1], m[2], "running");
        }
      }
    }
  }
  return states;
}

namespace {

// The launcher command of every run in `indices`, checked to be runnable here.
std::map<int64_t, std::vector<std::string>> local_launch_commands(const Campaign& c, const std::vector<int64_t>& indices) {
  std::map<int64_t, std::vector<std::string>> argv_of;
  for (const auto& g : group_by_shape(c, indices))  // validates gpu/mpi/storage against the site
    for (int64_t i : g.indices) {
      auto cmd = launch_command(shape_mpi(c.site, g.shape), g.shape.workers);
      if (::access(cmd.back().c_str(), X_OK) != 0)
        throw ConfigError("site " + c.site.path + ": " +
                          (!g.shape.gpu.empty() && !c.site.gpu.at(g.shape.gpu).binary.empty() ? "gpu." + g.shape.gpu
                                                                                             : "mpi." + g.shape.mpi) +
                          ".binary: " + cmd.back() +
                          " is not an executable here; build it (scripts/build.sh) or fix `binary` in the site file");
      if (!on_path(cmd.front()))
        throw ConfigError("site " + c.site.path + ": mpi." + g.shape.mpi + ": the launcher '" + cmd.front() +
                          "' is not on PATH; install it or set launcher_command");
      for (const char* a : {"run", "--manifest"}) cmd.push_back(a);
      cmd.push_back(c.dir);
      cmd.push_back("--index");
      cmd.push_back(std::to_string(i));
      argv_of[i] = cmd;
    }
  return argv_of;
}

// Starts one run's launcher with the site's environment, its output in logs/<run_id>.launcher.log.
pid_t start_local_run(const Campaign& c, const ManifestRun& run, std::vector<std::string> args) {
  const std::string out_path = campaign_logs_dir(c.dir) + "/" + run.run_id + ".launcher.log";
  const pid_t pid = ::fork();
  if (pid < 0) throw RuntimeError("fork failed while starting run " + run.run_id);
  if (pid > 0) return pid;
  for (const auto& [k, v] : c.site.env) ::setenv(k.c_str(), v.c_str(), 1);
  const int fd = ::open(out_path.c_str(), O_WRONLY | O_CREAT | O_APPEND, 0644);
  if (fd >= 0) {
    ::dup2(fd, 1);
    ::dup2(fd, 2);
    ::close(fd);
  }
  std::vector<char*> cargv;
  for (auto& a : args) cargv.push_back(a.data());
  cargv.push_back(nullptr);
  ::execvp(cargv[0], cargv.data());
  std::fprintf(stderr, "trainscale sweep submit: cannot start %s: %s\n", cargv[0], std::strerror(errno));
  ::_exit(127);
}

// What a launcher's log says about a rank that ended the job, on one line ("" when it says
// nothing we know): Open MPI's "mpirun noticed that process rank 1 with PID 0 on node n1 exited
// on signal 9 (Killed).", MPICH's "BAD TERMINATION" box ("PID 4321 RUNNING AT n1, EXIT CODE: 9"),
// or a rank's own last words ("trainscale run: rank 0 ...": a watchdog or an error).
std::string launcher_notice(const std::string& log_path) {
  std::ifstream in(log_path);
  std::string openmpi, mpich, ours;
  for (std::string line; std::getline(in, line);) {
    const auto text = line.find_first_not_of("= \t");
    if (text == std::string::npos) continue;
    const std::string trimmed = line.substr(text, line.find_last_not_of(" \t\r") + 1 - text);
    if (openmpi.empty() && trimmed.find("noticed that process rank") != std::string::npos) openmpi = trimmed;
    if (trimmed.rfind("PID ", 0) == 0 || trimmed.rfind("EXIT CODE:", 0) == 0 || trimmed.rfind("KILLED BY SIGNAL", 0) == 0)
      mpich += (mpich.empty() ? "" : ", ") + trimmed;
    if (ours.empty() && trimmed.rfind("trainscale run: rank ", 0) == 0) ours = trimmed;
  }
  std::string notice = !openmpi.empty() ? openmpi : !mpich.empty() ? "the launcher: " + mpich : "";
  if (!ours.empty()) notice += (notice.empty() ? "" : "; ") + ours;
  return notice;
}

// "done", "diverged" or "failed: <reason>" of a finished launcher; a launcher that left no
// marker gets a FAILED marker saying so, with what its log says about the rank that ended it.
std::string local_outcome(const Campaign& c, const ManifestRun& run, int wstatus, bool* failed) {
  const RunFiles f = run_files(c.dir, run.run_id);
  if (const auto done = read_marker_if_present(f.done)) {
    *failed = false;
    return done->status == "diverged" ? "diverged" : "done";
  }
  *failed = true;
  std::optional<RunMarker> marker = read_marker_if_present(f.failed);
  if (!marker) {
    marker = RunMarker{};
    const std::string log = campaign_logs_dir(c.dir) + "/" + run.run_id + ".launcher.log";
    const std::string notice = launcher_notice(log);
    marker->reason = (WIFEXITED(wstatus) ? "the launcher exited with code " + std::to_string(WEXITSTATUS(wstatus))
                                         : "the launcher was killed by signal " + std::to_string(WTERMSIG(wstatus))) +
                     " without a result" + (notice.empty() ? "" : " (" + notice + ")") + "; see logs/" + run.run_id +
                     ".launcher.log";
    marker->host = host_name();
    write_marker(f.failed, *marker);
    std::error_code ec;
    fs::remove(f.running, ec);
  }
  return "failed: " + marker->reason;
}

}  // namespace

int64_t run_local(const Campaign& c, const std::vector<int64_t>& indices, int throttle, std::ostream& progress) {
  const int64_t n = static_cast<int64_t>(indices.size());
  throttle = std::max(1, throttle);
  const auto argv_of = local_launch_commands(c, indices);
  std::error_code ec;
  fs::create_directories(campaign_logs_dir(c.dir), ec);
  const auto t0 = std::chrono::steady_clock::now();
  std::map<pid_t, int64_t> live;
  size_t next = 0;
  int64_t finished = 0, failures = 0;
  while (next < indices.size() || !live.empty()) {
    while (next < indices.size() && static_cast<int>(live.size()) < throttle) {
      const int64_t index = indices[next++];
      live[start_local_run(c, c.runs[index], argv_of.at(index))] = index;
    }
    int wstatus = 0;
    const pid_t pid = ::waitpid(-1, &wstatus, 0);
    if (pid < 0) {
      if (errno == EINTR) continue;
      break;
    }
    auto it = live.find(pid);
    if (it == live.end()) continue;
    const int64_t index = it->second;
    live.erase(it);
    bool failed = false;
    const std::string outcome = local_outcome(c, c.runs[index], wstatus, &failed);
    failures += failed ? 1 : 0;
    ++finished;
    const double elapsed = std::chrono::duration<double>(std::chrono::steady_clock::now() - t0).count();
    const double eta = elapsed / static_cast<double>(finished) * static_cast<double>(n - finished);
    progress << "[" << finished << "/" << n << "] index " << index << " " << c.runs[index].run_id << ": " << outcome
             << " | failures " << failures << " | elapsed " << seconds_text(elapsed) << " | ETA "
             << (finished == n ? std::string("0s") : seconds_text(eta)) << std::endl;
  }
  return failures;
}

}  // namespace ts
