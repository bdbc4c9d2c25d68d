// Reading a run config's keys from YAML and --set (see raw_values.h).
#include "config/raw_values.h"

#include <yaml-cpp/yaml.h>

#include <algorithm>
#include <vector>

#include "config/schema.h"
#include "config/strict_yaml.h"
#include "core/error.h"
#include "core/names.h"
#include "core/strings.h"

namespace ts {
namespace {

[[noreturn]] void fail(const std::string& where, const std::string& msg) { throw ConfigError(where + ": " + msg); }

// "unknown key 'x'; did you mean 'y'? Accepted keys under 'dist': ..." (or why it was removed).
std::string unknown_key_message(const std::string& key, const std::string& scope) {
  const auto& removed = removed_run_config_keys();
  if (auto it = removed.find(key); it != removed.end()) return "key '" + key + "' " + it->second;
  const std::vector<std::string> keys = run_config_keys();
  std::string msg = "unknown key '" + key + "'";
  const std::string best = closest_match(key, keys);
  if (!best.empty()) msg += "; did you mean '" + best + "'?";
  std::vector<std::string> here;  // the keys (or groups) accepted at this level
  for (const auto& k : keys) {
    const std::string rest = scope.empty() ? k : (starts_with(k, scope + ".") ? k.substr(scope.size() + 1) : "");
    if (rest.empty()) continue;
    const std::string first = rest.substr(0, rest.find('.'));
    if (std::find(here.begin(), here.end(), first) == here.end()) here.push_back(first);
  }
  return msg + " Accepted keys" + (scope.empty() ? std::string() : " under '" + scope + "'") + ": " + join(here) +
         ". See docs/config.md.";
}

// A list key's items joined by commas ("96,32"); each item must be a scalar.
std::string list_text(const YAML::Node& list, const std::string& key, const std::string& where) {
  std::string text;
  for (const auto& item : list) {
    if (!item.IsScalar()) fail(where, "key '" + key + "' must be a list of numbers, e.g. " + key + ": [96, 32]");
    text += (text.empty() ? "" : ",") + item.Scalar();
  }
  if (text.empty()) fail(where, "key '" + key + "' is an empty list; give one entry per rank, e.g. " + key + ": [96, 32]");
  return text;
}

// `ranks: [{backend: cpu, threads: 16}, {backend: cuda}]` -> ranks.backend "cpu,cuda" and
// ranks.threads "16,": one item per rank, empty where an entry leaves the key out (the run's
// backend / threads fill it when the config is resolved, config/rank_config.cpp).
void read_rank_list(const YAML::Node& list, const std::string& where, RawValues& values) {
  const std::vector<std::string> fields = {"backend", "threads"};
  std::vector<std::vector<std::string>> items(fields.size());
  std::vector<bool> given(fields.size(), false);
  for (const auto& entry : list) {
    if (!entry.IsMap())
      fail(where, "key 'ranks' must be a list of mappings, one per rank, e.g. ranks: [{backend: cpu, threads: 16}, "
                  "{backend: cuda}]");
    for (auto& f : items) f.emplace_back();
    for (auto it = entry.begin(); it != entry.end(); ++it) {
      const std::string name = it->first.IsScalar() ? it->first.Scalar() : "";
      const auto field = std::find(fields.begin(), fields.end(), name);
      if (field == fields.end())
        fail(where, "key 'ranks': an entry's key '" + one_line(name) + "' is not a per-rank setting; accepted: " +
                        join(fields) + ". See docs/config.md.");
      if (!it->second.IsScalar() || it->second.Scalar().empty())
        fail(where, "key 'ranks." + name + "' in an entry must be one value, e.g. {" + name + ": " +
                        (name == "backend" ? "cuda" : "16") + "}");
      const size_t f = static_cast<size_t>(field - fields.begin());
      items[f].back() = it->second.Scalar();
      given[f] = true;
    }
  }
  if (items[0].empty()) fail(where, "key 'ranks' is an empty list; give one entry per rank, e.g. ranks: [{backend: cpu}, {backend: cuda}]");
  for (size_t f = 0; f < fields.size(); ++f)
    if (given[f]) values["ranks." + fields[f]] = {join(items[f], ","), where};
}

void walk(const YamlReader& file, const YAML::Node& node, const std::string& prefix, RawValues& values) {
  for (auto it = node.begin(); it != node.end(); ++it) {
    const std::string where = file.at(it->first);
    const std::string name = file.name(it->first, prefix.empty() ? "a run config (keys such as lr or dist)" : "key '" + prefix + "'");
    const std::string key = prefix.empty() ? name : prefix + "." + name;
    const YAML::Node value = it->second;  // a copy: it-> yields a temporary proxy, a reference would dangle
    if (key == "ranks" && value.IsSequence()) {
      read_rank_list(value, where, values);
    } else if (is_key_group(key)) {
      if (!value.IsMap()) fail(where, "key '" + key + "' must be a mapping of sub-keys, e.g. " + key + ": {...}");
      walk(file, value, key, values);
    } else if (const KeySpec* spec = find_key_spec(key)) {
      if (value.IsNull()) fail(where, "key '" + key + "' has no value; it must be " + value_type_name(spec->type));
      if (spec->list && value.IsSequence()) {
        values[key] = {list_text(value, key, where), where};
        continue;
      }
      if (!value.IsScalar())
        fail(where, "key '" + key + "' must be " + value_type_name(spec->type) + ", not a list or mapping");
      values[key] = {value.Scalar(), where};
    } else {
      fail(where, unknown_key_message(key, prefix));
    }
  }
}

// A list key's value given to --set: "96,32" as it is, or Hydra's and YAML's flow form
// "[96, 32]" read as YAML, whose items are joined like a YAML file's list ("96,32").
std::string override_list_text(const std::string& key, const std::string& value, const std::string& where) {
  if (trim(value).rfind('[', 0) != 0) return value;
  YAML::Node list;
  try {
    list = load_yaml_strictly(value, where);
  } catch (const ConfigError&) {
    list = YAML::Node();  // the message below says what is accepted
  }
  if (!list.IsSequence()) {
    const std::string items = key == "ranks.backend" ? "cpu, cuda" : key == "ranks.threads" ? "16, 4" : "96, 32";
    const std::string group = key.substr(0, key.find('.')), name = key.substr(key.find('.') + 1);
    fail(where, "key '" + key + "': '" + value + "' is not a list; write --set '" + key + "=[" + items + "]' or --set " +
                    key + "=" + join(split(items, ' '), "") + " (in the YAML file: " + group + ": {" + name + ": [" +
                    items + "]})");
  }
  return list_text(list, key, where);
}

}  // namespace

RawValues read_yaml_values(const std::string& yaml_text, const std::string& origin) {
  const YamlReader file{origin};
  const YAML::Node root = file.load(yaml_text);  // duplicate keys, documents, aliases
  RawValues values;
  if (yaml_is_empty(root)) return values;
  if (!root.IsMap()) throw ConfigError(origin + ": a run config must be a YAML mapping of keys (see docs/config.md)");
  walk(file, root, "", values);
  return values;
}

void apply_override(RawValues& values, const std::string& assignment) {
  const std::string where = "--set " + one_line(assignment);  // messages stay one line
  if (!assignment.empty() && assignment[0] == '~') {  // --set ~key: the key as if the YAML lacked it
    const std::string key = assignment.substr(1);
    if (!find_key_spec(key) && !is_key_group(key))
      fail(where, "~KEY removes a key (or every key of a group: ~dist); " + unknown_key_message(key, ""));
    for (auto it = values.begin(); it != values.end();)
      it = it->first == key || it->first.rfind(key + ".", 0) == 0 ? values.erase(it) : std::next(it);
    return;
  }
  const auto eq = assignment.find('=');
  if (eq == std::string::npos || eq == 0)
    fail(where, "expected key=value with a dotted key, e.g. --set dist.allreduce=tree");
  const std::string key = assignment.substr(0, eq);
  if (!find_key_spec(key)) {
    if (is_key_group(key)) fail(where, "'" + key + "' is a group; set one of its keys, e.g. " + key + ".<key>=...");
    fail(where, unknown_key_message(key, ""));
  }
  const auto earlier = values.find(key);
  if (earlier != values.end() && earlier->second.where.rfind("--set ", 0) == 0)
    fail(where, "key '" + key + "' is set twice (also " + earlier->second.where + "); keep one");
  // An override of one key of an exclusive group replaces the YAML's other key of that group.
  for (const auto& group : exclusive_key_groups()) {
    if (std::find(group.begin(), group.end(), key) == group.end()) continue;
    for (const std::string& other : group) {
      const auto it = values.find(other);
      if (other != key && it != values.end() && it->second.where.rfind("--set ", 0) != 0) values.erase(it);
    }
  }
  const std::string value = assignment.substr(eq + 1);
  values[key] = {find_key_spec(key)->list ? override_list_text(key, value, where) : value, where};
}

}  // namespace ts
