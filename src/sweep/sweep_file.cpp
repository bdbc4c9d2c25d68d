// Sweep file parsing (see sweep_file.h): shapes, keys and the base file; no point validation.
#include "sweep/sweep_file.h"

#include <yaml-cpp/yaml.h>

#include <algorithm>
#include <filesystem>
#include <set>

#include "core/error.h"
#include "config/schema.h"
#include "config/strict_yaml.h"
#include "core/file_io.h"
#include "core/names.h"
#include "core/strings.h"
#include "sweep/scheduler_values.h"

namespace ts {
namespace {

namespace fs = std::filesystem;

// The sweep file's reader (config/strict_yaml.h) and the run-config keys it names.
struct SweepParser : YamlReader {
  // A run-config key named in the sweep: must exist, with a suggestion when it does not.
  void check_key(const YAML::Node& key_node, const std::string& key, const std::string& section) const {
    static const std::vector<std::string> keys = run_config_keys();
    if (std::find(keys.begin(), keys.end(), key) != keys.end()) return;
    std::string msg = section + ": '" + key + "' is not a run-config key (dotted keys, e.g. dist.allreduce; see docs/config.md)";
    std::string best = closest_match(key, keys);
    if (!best.empty()) msg += "; did you mean '" + best + "'?";
    fail(key_node, msg);
  }

  SweepEntry entry(const YAML::Node& n, const std::string& what) const {
    if (!n.IsMap() || n.size() == 0)
      fail(n, what + ": expected a non-empty mapping of run-config keys to values, e.g. {workers: 1, dist.allreduce: mpi}");
    SweepEntry e;
    e.where = at(n);
    for (const auto& kv : n) {
      const std::string key = name(kv.first, what);
      check_key(kv.first, key, what);
      e.values.emplace_back(key, scalar(kv.second, what + "." + key));
    }
    return e;
  }

  std::vector<SweepEntry> entries(const YAML::Node& n, const std::string& section) const {
    if (!n.IsSequence()) fail(n, section + ": expected a list of points, e.g. [{workers: 1, dist.allreduce: mpi}]");
    std::vector<SweepEntry> out;
    for (size_t i = 0; i < n.size(); ++i) out.push_back(entry(n[i], section + "[" + std::to_string(i) + "]"));
    return out;
  }
};

// A key may be stepped by one dimension only.
void claim(const SweepParser& p, std::set<std::string>& swept, const YAML::Node& key_node, const std::string& key,
           const std::string& by) {
  if (!swept.insert(key).second) p.fail(key_node, by + ": key '" + key + "' is already varied by another matrix key or zip group");
}

// A path from the file's text may be anything (too long, a component too long): no throw.
bool path_exists(const fs::path& path) {
  std::error_code ignored;
  return fs::exists(path, ignored);
}

// base: relative to the sweep file's directory, else to the current directory. A path that
// exists but is a directory (or a FIFO, a device) is named as such, not as missing.
void read_base(const SweepParser& p, const YAML::Node& node, SweepFile& sweep) {
  const std::string base = p.scalar(node, "base");
  fs::path base_path(base);
  if (base_path.is_relative()) {
    const fs::path beside = fs::path(sweep.path).parent_path() / base_path;
    if (path_exists(beside)) base_path = beside;
    else if (!path_exists(base_path))
      p.fail(node, "base: run config '" + base + "' not found (looked at '" + beside.string() + "' beside the sweep file and '" +
                       (fs::current_path() / base_path).string() + "')");
  } else if (!path_exists(base_path)) {
    p.fail(node, "base: run config '" + base + "' not found");
  }
  std::error_code ignored;
  if (fs::is_directory(base_path, ignored))
    p.fail(node, "base: '" + base + "' is a directory (" + fs::absolute(base_path).lexically_normal().string() +
                     "), not a run config; name the YAML file in it");
  sweep.base_path = base_path.lexically_normal().string();
  sweep.base_text = read_config_text(sweep.base_path, "base run config (base:)");
  if (yaml_is_empty(load_yaml_strictly(sweep.base_text, sweep.base_path)))
    p.fail(node, "base: run config '" + sweep.base_path + "' is empty (no keys); write its keys (docs/config.md), or `{}` "
                 "for every default");
}

void read_matrix(const SweepParser& p, const YAML::Node& m, std::set<std::string>& swept, SweepFile& sweep) {
  if (!m.IsMap()) p.fail(m, "matrix: expected a mapping of run-config keys to lists, e.g. {dist.allreduce: [ring, tree]}");
  for (const auto& kv : m) {
    SweepDimension d;
    d.name = p.name(kv.first, "matrix");
    p.check_key(kv.first, d.name, "matrix");
    claim(p, swept, kv.first, d.name, "matrix");
    d.keys = {d.name};
    d.where = p.at(kv.first);
    for (auto& v : p.list(kv.second, "matrix." + d.name, "[ring, tree]")) d.values.push_back({v});
    sweep.dimensions.push_back(std::move(d));
  }
}

SweepDimension read_zip_group(const SweepParser& p, const YAML::Node& name, const YAML::Node& body,
                              std::set<std::string>& swept) {
  SweepDimension d;
  d.name = p.name(name, "zip");
  d.where = p.at(name);
  if (!body.IsMap() || body.size() == 0)
    p.fail(body, "zip group '" + d.name + "': expected a mapping of run-config keys to equally long lists");
  std::vector<std::vector<std::string>> columns;
  std::string lengths;
  for (const auto& kv : body) {
    const std::string key = p.name(kv.first, "zip." + d.name);
    p.check_key(kv.first, key, "zip group '" + d.name + "'");
    claim(p, swept, kv.first, key, "zip group '" + d.name + "'");
    d.keys.push_back(key);
    columns.push_back(p.list(kv.second, "zip." + d.name + "." + key, "[ring, tree]"));
    lengths += (lengths.empty() ? "" : ", ") + key + ": " + std::to_string(columns.back().size());
  }
  for (const auto& c : columns)
    if (c.size() != columns.front().size())
      p.fail(name, "zip group '" + d.name + "': lists must have equal lengths, got " + lengths);
  for (size_t i = 0; i < columns.front().size(); ++i) {
    std::vector<std::string> step;
    for (const auto& c : columns) step.push_back(c[i]);
    d.values.push_back(std::move(step));
  }
  return d;
}

std::string read_resources(const SweepParser& p, const YAML::Node& r) {
  if (!r.IsMap()) p.fail(r, "resources: expected a mapping, e.g. {walltime: \"00:20:00\", cpus_per_worker: 1}");
  p.check_keys(r, "resources", {"walltime", "cpus_per_worker", "workers_per_node", "partition", "mem"});
  for (const auto& kv : r) {
    const std::string key = kv.first.Scalar();
    const std::string problem = resource_value_problem(key, p.scalar(kv.second, "resources." + key));
    if (!problem.empty()) p.fail(kv.second, "resources key '" + key + "': " + problem);
  }
  YAML::Emitter em;
  emit_yaml_node(em, r);
  return em.c_str();
}

}  // namespace

void emit_yaml_node(YAML::Emitter& em, const YAML::Node& node) {
  if (node.IsMap()) {
    em << YAML::BeginMap;
    for (const auto& kv : node) {
      em << YAML::Key;
      emit_yaml_node(em, kv.first);
      em << YAML::Value;
      emit_yaml_node(em, kv.second);
    }
    em << YAML::EndMap;
  } else if (node.IsSequence()) {
    em << YAML::BeginSeq;
    for (const auto& v : node) emit_yaml_node(em, v);
    em << YAML::EndSeq;
  } else if (node.IsScalar()) {
    if (node.Tag() == "!") em << YAML::DoubleQuoted << node.Scalar();  // was quoted in the source
    else em << node.Scalar();
  } else {
    em << YAML::Null;
  }
}

SweepFile load_sweep_file(const std::string& path) {
  return parse_sweep_file(read_config_text(path, "sweep file"), path);
}

SweepFile parse_sweep_file(const std::string& text, const std::string& path) {
  SweepParser p;
  p.path = path;
  const YAML::Node root = p.load(text);  // duplicate keys (two `matrix:`), documents, aliases
  if (yaml_is_empty(root))
    throw ConfigError(path + ": the sweep file is empty (" + (text.empty() ? "0 bytes" : "comments only") +
                      "); a sweep file is a YAML mapping with at least `base` (see docs/sweeps.md)");
  if (!root.IsMap()) throw ConfigError(path + ": a sweep file must be a YAML mapping with at least `base` (see docs/sweeps.md)");
  // The accepted top-level keys, in documentation order (unknown ones are errors with a suggestion).
  p.check_keys(root, "sweep", {"campaign", "base", "matrix", "zip", "exclude", "include", "repetitions", "resources"});

  SweepFile sweep;
  sweep.path = path;
  sweep.campaign = fs::path(path).stem().string();
  if (root["campaign"]) {
    sweep.campaign = p.scalar(root["campaign"], "campaign");
    check_name(sweep.campaign, "campaign name", p.at(root["campaign"]), "campaign");
  } else {
    check_name(sweep.campaign, "campaign name (the sweep file's stem; set `campaign:` to choose one)", path, "campaign");
  }
  if (!root["base"]) throw ConfigError(path + ": missing `base` (the run config the sweep varies), e.g. base: ../runs/lenet_fmnist.yaml");
  read_base(p, root["base"], sweep);
  std::set<std::string> swept;
  if (root["matrix"]) read_matrix(p, root["matrix"], swept, sweep);
  if (root["zip"]) {
    const YAML::Node z = root["zip"];
    if (!z.IsMap()) p.fail(z, "zip: expected a mapping of group names to {key: [values], ...}");
    for (const auto& group : z) sweep.dimensions.push_back(read_zip_group(p, group.first, group.second, swept));
  }
  if (root["exclude"]) sweep.exclude = p.entries(root["exclude"], "exclude");
  if (root["include"]) sweep.include = p.entries(root["include"], "include");
  if (root["repetitions"]) sweep.repetitions = static_cast<int>(p.integer(root["repetitions"], "repetitions", 1, 1000000));
  sweep.resources_yaml = root["resources"] ? read_resources(p, root["resources"]) : "{}";
  return sweep;
}

}  // namespace ts
