// config-internal: the values a run config gives, as text with where each came from, read
// from YAML (nested mappings flattened to dotted keys) and `--set key=value` overrides. Keys
// are checked against the schema here (unknown keys get the closest suggestion); values are
// checked when the config is resolved.
#pragma once

#include <map>
#include <string>

namespace ts {

struct RawValue {
  std::string text;
  std::string where;  // "file:line" or "--set k=v"
};
using RawValues = std::map<std::string, RawValue>;

// The keys of `yaml_text` (a mapping, possibly empty); ConfigError naming `origin` and the line.
RawValues read_yaml_values(const std::string& yaml_text, const std::string& origin);
// Sets one "dotted.key=value" over `values`.
void apply_override(RawValues& values, const std::string& assignment);

}  // namespace ts
