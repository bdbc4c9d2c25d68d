// Site file parsing and the run-vs-site checks (see site.h).
#include "sweep/site.h"

#include <yaml-cpp/yaml.h>

#include <algorithm>
#include <filesystem>
#include <sstream>
#include <chrono>

#include <unistd.h>

#include "config/registries.h"
#include "config/strict_yaml.h"
#include "core/error.h"
#include "core/file_io.h"
#include "core/names.h"
#include "core/preemption_signal.h"
#include "core/strings.h"
#include "sweep/scheduler_values.h"

namespace ts {
namespace {

namespace fs = std::filesystem;

template <class Map>
std::string keys_of(const Map& m) {
  std::vector<std::string> k;
  for (const auto& kv : m) k.push_back(kv.first);
  return k.empty() ? std::string("none") : join(k);
}

// The site file's reader (config/strict_yaml.h): every value of a site file is one line, as a
// newline would end a line of a job script; a key without a value is "".
struct SiteParser : YamlReader {
  explicit SiteParser(const std::string& file) {
    path = file;
    null_is_empty = true;
    one_line_values = true;
  }
  // A value that a job script's header carries (sweep/scheduler_values.h): `problem` of it.
  std::string header_value(const YAML::Node& n, const std::string& key, std::string (*problem)(const std::string&)) const {
    const std::string value = scalar(n, key);
    const std::string why = problem(value);
    if (!why.empty()) fail(n, "key '" + key + "': " + why);
    return value;
  }
  std::string directive(const YAML::Node& n, const std::string& key, DirectiveKind kind) const {
    const std::string value = scalar(n, key);
    const std::string why = directive_value_problem(value, kind);
    if (!why.empty()) fail(n, "key '" + key + "': '" + one_line(value) + "': " + why);
    return value;
  }
  // An entry name (mpi, storage): it appears in shape labels and job-script comments.
  std::string entry_name(const YAML::Node& n, const std::string& section) const {
    const std::string entry = scalar(n, section);
    check_name(entry, section + " entry name", at(n), section);
    return entry;
  }
  std::vector<std::string> strings(const YAML::Node& n, const std::string& key) const {
    return YamlReader::strings(n, key, "[openmpi/4.1]");
  }
};

std::string partition_problem(const std::string& name) {
  const std::string why = scheduler_name_problem(name);
  return why.empty() ? "" : "'" + one_line(name) + "' is not a partition / queue name: " + why;
}
std::string account_problem(const std::string& name) {
  const std::string why = scheduler_name_problem(name);
  return why.empty() ? "" : "'" + one_line(name) + "' is not an account name: " + why;
}

// PBS select resources "name=value[:name=value...]"; trainscale writes the chunk count, ncpus,
// mpiprocs, ngpus and mem itself.
void check_select(const SiteParser& p, const YAML::Node& n, const std::string& key, const std::string& select) {
  static const std::vector<std::string> own = {"select", "ncpus", "mpiprocs", "ngpus", "mem"};
  std::istringstream in(select);
  std::string item;
  while (std::getline(in, item, ':')) {
    const size_t eq = item.find('=');
    const std::string name = item.substr(0, eq);
    if (item.empty() || eq == std::string::npos || eq == 0 || eq + 1 == item.size())
      p.fail(n, "key '" + key + "': '" + select + "' is not a list of PBS resources name=value separated by ':'"
                " (e.g. \"gpu_model=a100\" or \"gpu_model=a100:gpu_mem=80gb\")");
    if (std::find(own.begin(), own.end(), name) != own.end())
      p.fail(n, "key '" + key + "': '" + name + "' is written by trainscale itself (select chunk count, ncpus, "
                "mpiprocs, ngpus from gpus_per_node, mem from the sweep's resources); remove it");
  }
}

// node: {cores, gpus, memory_gb, oversubscribe}: what one compute node offers.
void read_node(const SiteParser& p, const YAML::Node& n, const std::string& section, SiteNode& node) {
  p.check_keys(n, section, {"cores", "gpus", "memory_gb", "oversubscribe"});
  if (n["cores"]) node.cores = static_cast<int>(p.integer(n["cores"], section + ".cores", 1));
  if (n["gpus"]) node.gpus = static_cast<int>(p.integer(n["gpus"], section + ".gpus", 0));
  if (n["memory_gb"]) node.memory_gb = p.number(n["memory_gb"], section + ".memory_gb", 0, true, 1e9);
  if (n["oversubscribe"]) node.oversubscribe = p.boolean(n["oversubscribe"], section + ".oversubscribe");
}

// gpu: generation (or any) -> {partition, gres, constraint, select, gpus_per_node, modules, binary, node}.
void read_gpus(const SiteParser& p, const YAML::Node& n, Site& s) {
  if (!n.IsMap())
    p.fail(n, "gpu: expected a mapping of GPU generations to {partition, gres, constraint, select, gpus_per_node, modules, "
              "binary}");
  // The entry names `gpu:` accepts: every GPU generation and `any` (not `none`: runs without a
  // GPU ask for no GPU).
  std::vector<std::string> names = accepted_gpu_generations();
  names.erase(std::remove(names.begin(), names.end(), "none"), names.end());
  for (const auto& kv : n) {
    const std::string name = p.name(kv.first, "gpu");
    if (std::find(names.begin(), names.end(), name) == names.end()) {
      std::string msg = "gpu: '" + name + "' is not a GPU generation";
      const std::string best = closest_match(name, names);
      if (!best.empty()) msg += " (did you mean '" + best + "'?)";
      p.fail(kv.first, msg + "; accepted: " + join(names, " | ") +
                           " (entries are named as the run config's gpu key; the scheduler's own GPU type goes in gres, "
                           "constraint or select)");
    }
    const std::string sec = "gpu." + name;
    p.check_keys(kv.second, sec, {"partition", "gres", "constraint", "select", "gpus_per_node", "modules", "binary", "node"});
    SiteGpu g;
    if (kv.second["partition"]) g.partition = p.header_value(kv.second["partition"], sec + ".partition", partition_problem);
    if (kv.second["gres"]) g.gres = p.directive(kv.second["gres"], sec + ".gres", DirectiveKind::gres);
    if (kv.second["constraint"]) g.constraint = p.directive(kv.second["constraint"], sec + ".constraint", DirectiveKind::constraint);
    if (kv.second["select"]) {
      g.select = p.directive(kv.second["select"], sec + ".select", DirectiveKind::select);
      check_select(p, kv.second["select"], sec + ".select", g.select);
    }
    if (kv.second["gpus_per_node"]) g.gpus_per_node = static_cast<int>(p.integer(kv.second["gpus_per_node"], sec + ".gpus_per_node", 1));
    if (kv.second["modules"]) g.modules = p.strings(kv.second["modules"], sec + ".modules");
    if (kv.second["binary"]) g.binary = p.scalar(kv.second["binary"], sec + ".binary");
    if (kv.second["node"]) read_node(p, kv.second["node"], sec + ".node", g.node);
    s.gpu[name] = g;
  }
}

// mpi: flavor -> {modules, launcher, launcher_command, srun_mpi, launcher_args, launcher_prefix, binary}.
void read_mpis(const SiteParser& p, const YAML::Node& n, Site& s) {
  if (!n.IsMap())
    p.fail(n, "mpi: expected a mapping of MPI flavors to {modules, launcher, launcher_command, srun_mpi, launcher_args, "
              "launcher_prefix, binary}");
  for (const auto& kv : n) {
    const std::string name = p.entry_name(kv.first, "mpi");
    const std::string sec = "mpi." + name;
    const YAML::Node e = kv.second.IsNull() ? YAML::Node(YAML::NodeType::Map) : kv.second;
    p.check_keys(e, sec, {"modules", "launcher", "launcher_command", "srun_mpi", "launcher_args", "launcher_prefix", "binary"});
    SiteMpi m;
    if (e["modules"]) m.modules = p.strings(e["modules"], sec + ".modules");
    if (e["launcher"]) m.launcher = p.choice(e["launcher"], sec + ".launcher", {"mpirun", "srun", "mpiexec"});
    if (e["launcher_command"]) m.launcher_command = p.scalar(e["launcher_command"], sec + ".launcher_command");
    if (e["srun_mpi"]) m.srun_mpi = p.scalar(e["srun_mpi"], sec + ".srun_mpi");
    if (e["launcher_args"]) m.launcher_args = p.strings(e["launcher_args"], sec + ".launcher_args");
    if (e["launcher_prefix"]) m.launcher_prefix = p.strings(e["launcher_prefix"], sec + ".launcher_prefix");
    if (e["binary"]) m.binary = p.scalar(e["binary"], sec + ".binary");
    s.mpi[name] = m;
    s.mpi_order.push_back(name);
  }
}

// requeue and signal_seconds (docs/reliability.md "Preemption").
void read_preemption(const SiteParser& p, const YAML::Node& root, Site& s) {
  if (root["requeue"]) s.requeue = p.boolean(root["requeue"], "requeue");
  if (!root["signal_seconds"]) return;
  const int64_t seconds = p.integer(root["signal_seconds"], "signal_seconds", 0);
  if (seconds > 65535) p.fail(root["signal_seconds"], "key 'signal_seconds': " + std::to_string(seconds) +
                                                          " is out of range; accepted: 0 ... 65535 (sbatch --signal)");
  if (s.scheduler == "pbs")
    p.fail(root["signal_seconds"], "key 'signal_seconds': PBS has no signal ahead of the walltime (sbatch --signal is "
                                   "Slurm's); PBS sends SIGTERM kill_delay seconds before the kill, which the job "
                                   "script forwards anyway: remove the key");
  s.signal_seconds = static_cast<int>(seconds);
}

void read_simulate(const SiteParser& p, const YAML::Node& n, Site& s) {
  p.check_keys(n, "simulate", {"cluster", "cluster_set", "binary", "steps", "network_model", "coll_selector"});
  SiteSimulate& m = s.simulate;
  if (n["cluster"]) m.cluster = p.scalar(n["cluster"], "simulate.cluster");
  if (n["cluster_set"]) m.cluster_set = p.strings(n["cluster_set"], "simulate.cluster_set");
  if (n["binary"]) m.binary = p.scalar(n["binary"], "simulate.binary");
  if (n["steps"]) m.steps = p.integer(n["steps"], "simulate.steps", 1);
  if (n["network_model"]) m.network_model = p.scalar(n["network_model"], "simulate.network_model");
  if (n["coll_selector"]) m.coll_selector = p.scalar(n["coll_selector"], "simulate.coll_selector");
}

// fs::copy(src, dst, recursive), entry by entry: a preemption signal during the run's start-up
// stops it between two entries (core/preemption_signal.h) and the partial copy is removed.
void copy_tree_stoppably(const fs::path& src, const fs::path& dst, std::error_code& ec) {
  int64_t copied = 0;
  try {
    fs::create_directories(dst, ec);
    for (fs::recursive_directory_iterator it(src, ec), end; !ec && it != end; it.increment(ec)) {
      stop_if_signalled_during_startup([&] {
        return "stage-in: copied " + std::to_string(copied) + " entries of " + src.string() + " to " + dst.string() +
               ", removed again";
      });
      const fs::path to = dst / fs::relative(it->path(), src, ec);
      if (ec) return;
      if (it->is_directory(ec) && !it->is_symlink(ec)) fs::create_directories(to, ec);
      else fs::copy(it->path(), to, fs::copy_options::recursive, ec);  // a link: its target, as fs::copy did
      ++copied;
    }
  } catch (const StoppedDuringStartup&) {
    std::error_code ignored;
    fs::remove_all(dst, ignored);
    throw;
  }
}

}  // namespace

Site load_site_file(const std::string& path) {
  return parse_site_file(read_config_text(path, "site file"), path);
}

Site parse_site_file(const std::string& text, const std::string& path) {
  const SiteParser p(path);
  const YAML::Node root = p.load(text);  // duplicate keys, documents, aliases
  if (!root.IsMap()) throw ConfigError(path + ": a site file must be a YAML mapping with at least `scheduler` (see docs/sweeps.md)");
  // The accepted top-level keys, in documentation order.
  p.check_keys(root, "site", {"name", "scheduler", "account", "partition", "limits", "defaults", "node", "pack", "pack_side_by_side",
                              "pack_nodes", "requeue", "signal_seconds", "templates", "setup", "env", "mpi_default", "gpu",
                              "mpi", "storage", "scratch", "simulate"});

  Site s;
  s.path = path;
  s.name = fs::path(path).stem().string();
  if (root["name"]) s.name = p.scalar(root["name"], "name");
  if (!root["scheduler"]) throw ConfigError(path + ": missing `scheduler` (slurm | pbs | local | simulate)");
  s.scheduler = p.choice(root["scheduler"], "scheduler", {"slurm", "pbs", "local", "simulate"});
  if (const YAML::Node n = root["simulate"]) read_simulate(p, n, s);
  if (s.scheduler == "simulate" && s.simulate.cluster.empty())
    p.fail(root["scheduler"], "scheduler: simulate needs `simulate: {cluster: configs/clusters/NAME.yaml}` (docs/sweeps.md)");
  if (root["account"]) s.account = p.header_value(root["account"], "account", account_problem);
  if (root["partition"]) s.partition = p.header_value(root["partition"], "partition", partition_problem);
  if (root["templates"]) s.templates = p.scalar(root["templates"], "templates");
  if (root["scratch"]) s.scratch = p.scalar(root["scratch"], "scratch");
  if (root["setup"]) s.setup = p.strings(root["setup"], "setup");
  if (const YAML::Node n = root["limits"]) {
    p.check_keys(n, "limits", {"max_array_size", "throttle"});
    if (n["max_array_size"]) s.max_array_size = p.integer(n["max_array_size"], "limits.max_array_size", 1);
    if (n["throttle"]) s.throttle = static_cast<int>(p.integer(n["throttle"], "limits.throttle", 0));
  }
  if (const YAML::Node n = root["defaults"]) {
    p.check_keys(n, "defaults", {"walltime", "workers_per_node", "mem"});
    if (n["walltime"]) s.walltime = p.header_value(n["walltime"], "defaults.walltime", walltime_problem);
    if (n["mem"]) s.mem = p.header_value(n["mem"], "defaults.mem", memory_problem);
    if (n["workers_per_node"]) s.workers_per_node = static_cast<int>(p.integer(n["workers_per_node"], "defaults.workers_per_node", 1));
  }
  if (const YAML::Node n = root["node"]) read_node(p, n, "node", s.node);
  if (const YAML::Node n = root["pack"]) {
    const int64_t pack = p.integer(n, "pack", 1);
    if (pack > kMaxPack) p.fail(n, "key 'pack': " + std::to_string(pack) + " is out of range; accepted: 1 ... " + std::to_string(kMaxPack));
    if (pack > 1 && s.scheduler != "slurm" && s.scheduler != "pbs")
      p.fail(n, "key 'pack': " + std::to_string(pack) + " runs per allocation needs scheduler slurm or pbs; the " +
                    s.scheduler + " executor starts each run by itself (use limits.throttle for runs at a time)");
    s.pack = static_cast<int>(pack);
  }
  if (const YAML::Node n = root["pack_side_by_side"]) {
    s.pack_side_by_side = p.boolean(n, "pack_side_by_side");
    if (s.pack_side_by_side && s.scheduler != "slurm" && s.scheduler != "pbs")
      p.fail(n, "key 'pack_side_by_side': runs side by side in one allocation needs scheduler slurm or pbs; the " +
                    s.scheduler + " executor starts each run by itself (use limits.throttle for runs at a time)");
  }
  if (const YAML::Node n = root["pack_nodes"]) {
    const int64_t nodes = p.integer(n, "pack_nodes", 1);
    if (nodes > kMaxPack) p.fail(n, "key 'pack_nodes': " + std::to_string(nodes) + " is out of range; accepted: 1 ... " + std::to_string(kMaxPack));
    if (nodes > 1 && !s.pack_side_by_side)
      p.fail(n, "key 'pack_nodes': " + std::to_string(nodes) + " nodes for runs side by side needs pack_side_by_side: true");
    s.pack_nodes = static_cast<int>(nodes);
  }
  read_preemption(p, root, s);
  if (const YAML::Node n = root["env"]) {
    if (!n.IsMap()) p.fail(n, "env: expected a mapping NAME: value");
    for (const auto& kv : n) {
      const std::string name = p.header_value(kv.first, "env", env_name_problem);  // `export NAME=...` lines
      s.env[name] = p.scalar(kv.second, "env." + name);
    }
  }
  if (const YAML::Node n = root["gpu"]) read_gpus(p, n, s);
  if (const YAML::Node n = root["mpi"]) read_mpis(p, n, s);
  if (root["mpi_default"]) {
    s.mpi_default = p.scalar(root["mpi_default"], "mpi_default");
    if (!s.mpi.count(s.mpi_default))
      p.fail(root["mpi_default"], "key 'mpi_default': '" + s.mpi_default + "' is not an entry of `mpi` (" + keys_of(s.mpi) + ")");
  }
  if (const YAML::Node n = root["storage"]) {
    if (!n.IsMap()) p.fail(n, "storage: expected a mapping of storage names to {path, stage_from}");
    for (const auto& kv : n) {
      const std::string name = p.entry_name(kv.first, "storage");
      const std::string sec = "storage." + name;
      const YAML::Node e = kv.second.IsNull() ? YAML::Node(YAML::NodeType::Map) : kv.second;
      p.check_keys(e, sec, {"path", "stage_from"});
      SiteStorage st;
      if (e["path"]) st.path = p.scalar(e["path"], sec + ".path");
      if (e["stage_from"]) st.stage_from = p.scalar(e["stage_from"], sec + ".stage_from");
      s.storage[name] = st;
    }
    for (const auto& kv : n) {
      const std::string name = kv.first.Scalar();  // checked above
      const SiteStorage& st = s.storage[name];
      if (st.stage_from.empty()) continue;
      if (!s.storage.count(st.stage_from) || st.stage_from == name)
        p.fail(kv.first, "storage." + name + ".stage_from: '" + st.stage_from + "' is not another storage entry (" + keys_of(s.storage) + ")");
      if (st.path.empty() || s.storage.at(st.stage_from).path.empty())
        p.fail(kv.first, "storage." + name + ": a stage-in copy needs `path` on both '" + name + "' and '" + st.stage_from + "'");
    }
  }
  return s;
}

Site default_local_site() {
  Site s;
  s.path = "<built-in local site>";
  s.name = "local";
  s.throttle = 1;
  s.env = {{"OMPI_ALLOW_RUN_AS_ROOT", "1"}, {"OMPI_ALLOW_RUN_AS_ROOT_CONFIRM", "1"},
           {"OMPI_MCA_btl_vader_single_copy_mechanism", "none"}};
  SiteMpi m;
  m.launcher_args = {"--oversubscribe"};
  s.mpi["default"] = m;
  s.mpi_order = {"default"};
  s.mpi_default = "default";
  s.storage["local"] = SiteStorage{};
  return s;
}

std::string site_check_run(const Site& site, const std::string& gpu, const std::string& mpi_flavor,
                           const std::string& storage) {
  if (site.scheduler == "simulate") return "";
  if (gpu != "none" && !site.gpu.count(gpu))
    return "key 'gpu': '" + gpu + "' is not a GPU of site " + site.path + " (its gpu entries: " + keys_of(site.gpu) +
           "); add a `gpu: {" + gpu + ": {...}}` entry that requests " +
           (gpu == "any" ? std::string("any GPU") : "a " + gpu) + ", name another generation, or use another site";
  if (mpi_flavor == "any" ? site.mpi.empty() : !site.mpi.count(mpi_flavor))
    return "key 'mpi_flavor': '" + mpi_flavor + "' is not an MPI flavor of site " + site.path + " (its mpi entries: " +
           keys_of(site.mpi) + "); add it under `mpi` or use mpi_flavor: any";
  if (!site.storage.count(storage))
    return "key 'dataset.storage': '" + storage + "' is not a storage of site " + site.path + " (its storage entries: " +
           keys_of(site.storage) + "); add it under `storage`";
  return "";
}

std::string shell_quote(const std::string& s) {
  if (!s.empty() && s.find_first_not_of("abcdefghijklmnopqrstuvwxyzABCDEFGHIJKLMNOPQRSTUVWXYZ0123456789_-./=:,+@%") ==
                        std::string::npos)
    return s;
  std::string out = "'";
  for (char c : s) out += c == '\'' ? std::string("'\\''") : std::string(1, c);
  return out + "'";
}

StagedData stage_dataset(const Site& site, const std::string& storage, const std::string& dataset_root, bool copy) {
  StagedData out;
  auto it = site.storage.find(storage);
  if (it == site.storage.end())
    throw ConfigError("dataset.storage: '" + storage + "' is not a storage of site " + site.path);
  const SiteStorage& st = it->second;
  if (st.path.empty()) {
    out.root = dataset_root;
    out.note = "storage '" + storage + "': dataset.root as written (" + dataset_root + ")";
    return out;
  }
  const fs::path normal = fs::path(dataset_root).lexically_normal();  // "data/" names "data" too
  const std::string leaf = (normal.has_filename() ? normal : normal.parent_path()).filename().string();
  out.root = (fs::path(st.path) / leaf).string();
  if (st.stage_from.empty() || !copy) {
    out.note = "storage '" + storage + "': reading " + out.root;
    return out;
  }
  const fs::path src = fs::path(site.storage.at(st.stage_from).path) / leaf;
  const fs::path stamp = fs::path(out.root) / ".trainscale-staged";
  if (fs::exists(stamp)) {
    out.note = "storage '" + storage + "': " + out.root + " already staged from '" + st.stage_from + "'";
    return out;
  }
  if (!fs::is_directory(src))
    throw RuntimeError("stage-in for storage '" + storage + "': source " + src.string() + " (storage '" + st.stage_from +
                       "') is not a directory; check the site's storage paths");
  const auto t0 = std::chrono::steady_clock::now();
  const fs::path tmp = out.root + ".tmp-" + std::to_string(::getpid());
  std::error_code ec;
  fs::create_directories(fs::path(out.root).parent_path(), ec);
  fs::remove_all(tmp, ec);
  copy_tree_stoppably(src, tmp, ec);
  if (ec) throw RuntimeError("stage-in: copying " + src.string() + " to " + tmp.string() + " failed: " + ec.message());
  // The stamp goes in (flushed to disk) before the directory takes its final name.
  write_file_atomically((tmp / ".trainscale-staged").string(), "staged from " + src.string() + "\n");
  fs::remove_all(out.root, ec);
  fs::rename(tmp, out.root, ec);
  if (ec) throw RuntimeError("stage-in: renaming " + tmp.string() + " to " + out.root + " failed: " + ec.message());
  out.copied = true;
  out.seconds = std::chrono::duration<double>(std::chrono::steady_clock::now() - t0).count();
  out.note = "storage '" + storage + "': staged " + src.string() + " -> " + out.root + " in " + std::to_string(out.seconds) + " s";
  return out;
}

}  // namespace ts
