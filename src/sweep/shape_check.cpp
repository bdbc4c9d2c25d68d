// Resource shapes against the node (see shape_check.h).
#include "sweep/shape_check.h"

#include <algorithm>
#include <cctype>
#include <filesystem>
#include <fstream>
#include <regex>

#include <sched.h>

#include "core/error.h"
#include "core/host_info.h"
#include "core/strings.h"

namespace ts {
namespace {

namespace fs = std::filesystem;

constexpr double kGiB = 1024.0 * 1024.0 * 1024.0;

// The cgroup v2 memory limit of this process's cgroup root view, 0 when there is none.
double cgroup_memory_limit() {
  std::ifstream in("/sys/fs/cgroup/memory.max");
  std::string text;
  if (!(in >> text) || text == "max") return 0.0;
  try {
    return std::stod(text);
  } catch (const std::exception&) {
    return 0.0;
  }
}

// "runs 2, 3 (ids 1a2b-r0, 3c4d-r0)": up to 10 of a group's runs.
std::string runs_text(const Campaign& c, const std::vector<int64_t>& indices) {
  std::string idx, ids;
  for (size_t i = 0; i < indices.size() && i < 10; ++i) {
    idx += (i ? ", " : "") + std::to_string(indices[i]);
    ids += (i ? ", " : "") + c.runs.at(indices[i]).run_id;
  }
  if (indices.size() > 10) idx += ", ... (" + std::to_string(indices.size()) + " runs)";
  return std::string(indices.size() == 1 ? "run " : "runs ") + idx + " (" + ids + (indices.size() > 10 ? ", ..." : "") + ")";
}

// The cores problem of one shape, "" when it fits.
std::string cores_problem(const JobShape& s, bool local, const SiteNode& node, const std::string& where) {
  if (!node.cores || node.oversubscribe) return "";
  const int per_node = local ? s.workers : s.tasks_per_node;
  const int needed = per_node * s.cpus_per_task;
  if (needed <= *node.cores) return "";
  std::string msg = "need " + std::to_string(per_node) + " worker(s) x " + std::to_string(s.cpus_per_task) + " core(s) = " +
                    std::to_string(needed) + " cores on one node, but a node of " + where + " has " +
                    std::to_string(*node.cores) + ". Lower `threads` (or resources.cpus_per_worker)";
  if (s.cpus_per_task > *node.cores) return msg + " to at most " + std::to_string(*node.cores);
  msg += " or `workers`";
  if (!local) msg += ", or spread the workers with resources.workers_per_node";
  return msg + ", or accept oversubscribed cores with node: {oversubscribe: true} in the site file (timings then "
               "measure contention)";
}

std::string gpus_problem(const JobShape& s, const SiteNode& node, const std::string& where) {
  if (!node.gpus || s.gpus_per_node <= *node.gpus) return "";
  if (*node.gpus == 0) return "ask for GPUs, but the nodes of " + where + " have none; run them on a site with GPUs";
  return "ask for " + std::to_string(s.gpus_per_node) + " GPUs per node, but a node of " + where + " has " +
         std::to_string(*node.gpus) + "; set the site's gpu." + s.gpu + ".gpus_per_node to at most " +
         std::to_string(*node.gpus);
}

std::string memory_problem(const JobShape& s, const SiteNode& node, const std::string& where) {
  if (!node.memory_gb || s.mem.empty()) return "";
  const std::optional<double> bytes = memory_bytes(s.mem);
  if (!bytes || *bytes <= *node.memory_gb * kGiB) return "";
  return "ask for resources.mem " + s.mem + " per node, but a node of " + where + " has " + format_number("%.4g", *node.memory_gb) +
         " GiB; lower resources.mem in the sweep";
}

}  // namespace

SiteNode local_machine_node() {
  SiteNode node;
  cpu_set_t set;
  CPU_ZERO(&set);
  node.cores = ::sched_getaffinity(0, sizeof set, &set) == 0 ? CPU_COUNT(&set)
                                                              : static_cast<int>(std::max<int64_t>(1, host_hardware_threads()));
  int gpus = 0;
  std::error_code ec;
  const std::regex device("nvidia[0-9]+");
  for (const auto& e : fs::directory_iterator("/dev", ec))
    if (std::regex_match(e.path().filename().string(), device)) ++gpus;
  node.gpus = gpus;
  double memory = static_cast<double>(host_memory_bytes());
  const double limit = cgroup_memory_limit();
  if (limit > 0 && (memory <= 0 || limit < memory)) memory = limit;
  if (memory > 0) node.memory_gb = memory / kGiB;
  return node;
}

SiteNode effective_node(const Site& site, const std::string& scheduler) {
  if (scheduler != "local") return site.node;
  if (site.scheduler == "local" && site.node.declared()) return site.node;
  SiteNode node = local_machine_node();  // `node: {oversubscribe: true}` alone: this machine, oversubscribed
  node.oversubscribe = site.scheduler == "local" && site.node.oversubscribe;
  return node;
}

std::optional<double> memory_bytes(const std::string& text) {
  static const std::regex form(R"(^\s*([0-9]+(\.[0-9]+)?)\s*([kKmMgGtT]?)[bB]?\s*$)");
  std::smatch m;
  if (!std::regex_match(text, m, form)) return std::nullopt;
  const double value = std::stod(m[1]);
  const char unit = m[3].length() ? static_cast<char>(std::toupper(static_cast<unsigned char>(m[3].str()[0]))) : 'M';
  const double scale = unit == 'K' ? 1024.0 : unit == 'M' ? 1024.0 * 1024.0 : unit == 'G' ? kGiB : kGiB * 1024.0;
  return value * scale;
}

PackLayout pack_layout(const Site& site, const JobShape& shape, int pack) {
  const SiteNode& node = site.node;
  PackLayout one{1, 1, shape.nodes};
  if (!site.pack_side_by_side || pack <= 1 || shape.nodes != 1 || shape.gpus_per_node > 0 || !shape.mem.empty() ||
      !node.cores || node.oversubscribe)
    return one;
  const int per_run = std::max(1, shape.tasks_per_node * shape.cpus_per_task);
  const int per_node = std::min(pack, *node.cores / per_run);
  if (per_node < 1) return one;
  const int width = std::min(pack, per_node * std::max(1, site.pack_nodes));
  if (width <= 1) return one;
  return {width, per_node, (width + per_node - 1) / per_node};
}

std::vector<std::string> shape_problems(const Campaign& c, const std::vector<ShapeGroup>& groups, const std::string& scheduler,
                                        const SiteNode& node) {
  const bool local = scheduler == "local";
  const bool this_machine = local && !(c.site.scheduler == "local" && c.site.node.declared());
  std::vector<std::string> out;
  for (const auto& g : groups) {
    SiteNode shape_node = node;
    std::string where = this_machine ? "this machine (local executor)" : "site " + c.site.name + " (" + c.site.path + ")";
    const auto gpu = g.shape.gpu.empty() ? c.site.gpu.end() : c.site.gpu.find(g.shape.gpu);
    if (!this_machine && gpu != c.site.gpu.end() && gpu->second.node.declared()) {  // this generation's own nodes
      const SiteNode& own = gpu->second.node;
      if (own.cores) shape_node.cores = own.cores;
      if (own.gpus) shape_node.gpus = own.gpus;
      if (own.memory_gb) shape_node.memory_gb = own.memory_gb;
      shape_node.oversubscribe = shape_node.oversubscribe || own.oversubscribe;
      where = "site " + c.site.name + " (" + c.site.path + ", gpu." + g.shape.gpu + ".node)";
    }
    for (const std::string& problem : {cores_problem(g.shape, local, shape_node, where), gpus_problem(g.shape, shape_node, where),
                                       memory_problem(g.shape, shape_node, where)})
      if (!problem.empty()) out.push_back(runs_text(c, g.indices) + " [" + g.shape.label() + "]: " + problem);
  }
  return out;
}

void check_shapes(const Campaign& c, const std::vector<ShapeGroup>& groups, const std::string& scheduler) {
  const std::vector<std::string> problems = shape_problems(c, groups, scheduler, effective_node(c.site, scheduler));
  if (problems.empty()) return;
  throw ConfigError("campaign " + c.name + ": " + std::to_string(problems.size()) +
                    " resource shape(s) can never be scheduled; nothing was submitted:\n  " + join(problems, "\n  "));
}

}  // namespace ts
