// Parsing and checking of cluster files (see cluster.h); writing them is cluster_yaml.cpp.
#include "perfmodel/cluster.h"

#include <algorithm>
#include <cmath>
#include <filesystem>

#include <yaml-cpp/yaml.h>

#include "config/registries.h"
#include "config/strict_yaml.h"
#include "core/error.h"
#include "core/file_io.h"
#include "core/strings.h"

namespace ts::perf {

// The `calibration:` section (cluster_yaml.cpp).
Calibration read_calibration(const YamlReader& reader, const YAML::Node& n);

namespace {

constexpr const char* kDoc = "docs/model.md \"Cluster files\"";

const std::vector<std::string> kTopologies = {"star", "mesh", "torus", "fat_tree"};

Topology topology_of(const std::string& name) {
  return static_cast<Topology>(std::find(kTopologies.begin(), kTopologies.end(), name) - kTopologies.begin());
}

GemmBlocking read_blocking(const YamlReader& p, const YAML::Node& n) {
  p.check_keys(n, "node.gemm_blocking", {"mc", "nc", "kc"});
  for (const char* k : {"mc", "nc", "kc"}) p.require(n, k, "node.gemm_blocking", kDoc);
  return {p.integer(n["mc"], "node.gemm_blocking.mc", 1), p.integer(n["nc"], "node.gemm_blocking.nc", 1),
          p.integer(n["kc"], "node.gemm_blocking.kc", 1)};
}

NodeSpec read_node(const YamlReader& p, const YAML::Node& n) {
  p.check_keys(n, "node", {"cores", "gpus", "memory_gb", "peak_gflops", "memory_bandwidth_gbs", "gemm_blocking",
                           "reduce_ns_per_byte"});
  for (const char* k : {"cores", "peak_gflops", "memory_bandwidth_gbs"}) p.require(n, k, "node", kDoc);
  NodeSpec node;
  node.cores = p.integer(n["cores"], "node.cores", 1);
  if (n["gpus"]) node.gpus = p.integer(n["gpus"], "node.gpus", 0);
  if (n["memory_gb"]) node.memory_gb = p.number(n["memory_gb"], "node.memory_gb", 0);
  p.check_keys(n["peak_gflops"], "node.peak_gflops", accepted_precision_names());
  for (const auto& kv : n["peak_gflops"]) {
    const std::string precision = p.name(kv.first, "node.peak_gflops");
    node.peak_gflops[precision] = p.number(kv.second, "node.peak_gflops." + precision, 0, true);
  }
  if (node.peak_gflops.empty()) p.fail(n["peak_gflops"], "node.peak_gflops: give at least fp32, e.g. {fp32: 8960}");
  node.memory_bandwidth_gbs = p.number(n["memory_bandwidth_gbs"], "node.memory_bandwidth_gbs", 0, true);
  if (n["gemm_blocking"]) node.gemm_blocking = read_blocking(p, n["gemm_blocking"]);
  if (n["reduce_ns_per_byte"]) node.reduce_ns_per_byte = p.number(n["reduce_ns_per_byte"], "node.reduce_ns_per_byte", 0);
  return node;
}

// topology, dims, alpha_us, bandwidth_gbps (and name) of one level, from a mapping `n`.
LinkLevel read_level(const YamlReader& p, const YAML::Node& n, const std::string& section, bool named) {
  LinkLevel level;
  if (named && n["name"]) level.name = p.scalar(n["name"], section + ".name");
  p.require(n, "alpha_us", section, kDoc);
  p.require(n, "bandwidth_gbps", section, kDoc);
  level.alpha_us = p.number(n["alpha_us"], section + ".alpha_us", 0);
  level.bandwidth_gbps = p.number(n["bandwidth_gbps"], section + ".bandwidth_gbps", 0, true);
  if (n["topology"]) level.topology = topology_of(p.choice(n["topology"], section + ".topology", kTopologies));
  if (n["dims"]) {
    const YAML::Node d = n["dims"];
    if (!d.IsSequence() || d.size() == 0) p.fail(d, "key '" + section + ".dims': expected a list of sizes, e.g. [32, 32]");
    for (const auto& v : d) level.dims.push_back(p.integer(v, section + ".dims", 1));
  }
  const bool grid = level.topology == Topology::mesh || level.topology == Topology::torus;
  if (grid && level.dims.empty())
    p.fail(n, section + ": topology " + topology_name(level.topology) + " needs dims (nodes per dimension, e.g. [32, 32])");
  if (!grid && !level.dims.empty())
    p.fail(n["dims"], "key '" + section + ".dims': only mesh and torus have dims (this level is " +
                          topology_name(level.topology) + ")");
  return level;
}

InterconnectSpec read_interconnect(const YamlReader& p, const YAML::Node& n) {
  p.check_keys(n, "interconnect", {"topology", "dims", "alpha_us", "bandwidth_gbps", "levels"});
  InterconnectSpec spec;
  if (!n["levels"]) {
    spec.levels.push_back(read_level(p, n, "interconnect", false));
    return spec;
  }
  for (const char* k : {"topology", "dims", "alpha_us", "bandwidth_gbps"})
    if (n[k])
      p.fail(n[k], std::string("interconnect.") + k + ": with `levels`, give it on each level (the last level is the " +
                       "network between nodes)");
  const YAML::Node levels = n["levels"];
  if (!levels.IsSequence() || levels.size() == 0)
    p.fail(levels, "interconnect.levels: expected a list of levels, innermost first, e.g. "
                   "[{name: nvlink, alpha_us: 2, bandwidth_gbps: 3600}, {name: infiniband, ...}]");
  for (size_t i = 0; i < levels.size(); ++i) {
    const std::string sec = "interconnect.levels[" + std::to_string(i) + "]";
    p.check_keys(levels[i], sec, {"name", "topology", "dims", "alpha_us", "bandwidth_gbps"});
    spec.levels.push_back(read_level(p, levels[i], sec, true));
  }
  return spec;
}

void apply_override(YAML::Node& root, const std::string& setting, const std::string& path) {
  const size_t eq = setting.find('=');
  if (eq == std::string::npos || eq == 0)
    throw ConfigError("--cluster-set " + setting + ": expected dotted.key=value, e.g. interconnect.topology=mesh");
  const std::vector<std::string> keys = split(setting.substr(0, eq), '.');
  YAML::Node value;
  try {
    value = YAML::Load(setting.substr(eq + 1));
  } catch (const YAML::Exception& e) {
    throw ConfigError("--cluster-set " + setting + ": the value is not valid YAML: " + e.msg);
  }
  std::vector<YAML::Node> chain{root};
  for (size_t i = 0; i + 1 < keys.size(); ++i) {
    YAML::Node next = chain.back()[keys[i]];
    if (!next.IsDefined() || next.IsNull()) next = YAML::Node(YAML::NodeType::Map);
    if (!next.IsMap()) throw ConfigError("--cluster-set " + setting + ": '" + keys[i] + "' of " + path + " is not a mapping");
    chain.back()[keys[i]] = next;
    chain.push_back(next);
  }
  chain.back()[keys.back()] = value;
}

}  // namespace

const char* topology_name(Topology topology) { return kTopologies.at(static_cast<size_t>(topology)).c_str(); }

std::vector<std::string> cluster_file_keys() {
  return {"name", "source", "nodes", "node", "interconnect", "mpi", "calibration"};
}

std::vector<std::string> mpi_allreduce_names() {
  return {"mst", "bkt", "ring", "tree", "butterfly", "rabenseifner", "ps", "shm", "ompi", "mpich", "intel", "mvapich2"};
}

LayerEfficiency Calibration::for_cores(double cores) const {
  const int64_t rounded = static_cast<int64_t>(std::lround(cores));
  if (rounded != threads) {
    auto it = at_threads.find(rounded);
    if (it != at_threads.end()) return it->second;
  }
  return *this;
}

double ClusterSpec::peak_gflops(const std::string& precision) const {
  auto it = node.peak_gflops.find(precision);
  if (it != node.peak_gflops.end()) return it->second;
  std::vector<std::string> have;
  for (const auto& kv : node.peak_gflops) have.push_back(kv.first);
  throw ConfigError((path.empty() ? name : path) + ": key 'node.peak_gflops." + precision + "' is missing: the run's precision " +
                    precision + " needs its peak; this cluster gives " + join(have) +
                    " (add it, or --set precision=" + have.front() + ")");
}

double ClusterSpec::gamma_s_per_byte() const {
  if (node.reduce_ns_per_byte > 0) return node.reduce_ns_per_byte * 1e-9;
  return 3.0 / (node.memory_bandwidth_gbs * 1e9);
}

int64_t ClusterSpec::ranks_per_node(int64_t threads) const {
  if (node.gpus > 0) return node.gpus;
  return std::max<int64_t>(1, node.cores / std::max<int64_t>(1, threads));
}

ClusterSpec load_cluster_file(const std::string& path, const std::vector<std::string>& overrides) {
  std::error_code not_a_path;  // a path from a site file or --cluster may be anything: no throw
  if (!std::filesystem::exists(path, not_a_path))
    throw ConfigError(path + ": no such cluster file; give one of configs/clusters/*.yaml (docs/model.md)");
  return parse_cluster_file(read_config_text(path, "cluster file"), path, overrides);
}

ClusterSpec parse_cluster_file(const std::string& text, const std::string& path, const std::vector<std::string>& overrides) {
  const YamlReader p{path};
  YAML::Node root = p.load(text);  // duplicate keys, documents, aliases
  if (yaml_is_empty(root))
    throw ConfigError(path + ": the cluster file is empty (" + (text.empty() ? "0 bytes" : "comments only") +
                      "); a cluster file is a YAML mapping (docs/model.md \"Cluster files\", configs/clusters/*.yaml)");
  if (!root.IsMap()) throw ConfigError(path + ": a cluster file must be a YAML mapping (docs/model.md \"Cluster files\")");
  for (const std::string& setting : overrides) apply_override(root, setting, path);
  p.check_keys(root, "cluster", cluster_file_keys());
  for (const char* k : {"name", "nodes", "node", "interconnect"}) p.require(root, k, "cluster", kDoc);
  ClusterSpec spec;
  spec.path = path;
  spec.name = p.scalar(root["name"], "name");
  if (root["source"]) spec.source = p.scalar(root["source"], "source");
  spec.nodes = p.integer(root["nodes"], "nodes", 1);
  spec.node = read_node(p, root["node"]);
  spec.interconnect = read_interconnect(p, root["interconnect"]);
  if (root["mpi"]) {
    p.check_keys(root["mpi"], "mpi", {"allreduce"});
    if (root["mpi"]["allreduce"]) spec.mpi.allreduce = p.choice(root["mpi"]["allreduce"], "mpi.allreduce", mpi_allreduce_names());
  }
  if (root["calibration"]) spec.calibration = read_calibration(p, root["calibration"]);
  for (const LinkLevel& level : spec.interconnect.levels) {
    int64_t product = 1;
    for (int64_t d : level.dims) product *= d;
    if (!level.dims.empty() && &level == &spec.interconnect.network() && product < spec.nodes)
      p.fail(root["interconnect"], "interconnect: dims of " + level.name + " hold " + std::to_string(product) +
                                       " nodes, fewer than nodes: " + std::to_string(spec.nodes));
  }
  return spec;
}

}  // namespace ts::perf
