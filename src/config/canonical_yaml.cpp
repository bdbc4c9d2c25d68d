// The canonical resolved YAML of a run config (see resolve_steps.h): every set key, nested
// mappings in schema order, strings double-quoted, numbers in their shortest spelling. The
// same configuration always gives the same bytes, so its hash (config_id) identifies it.
#include <yaml-cpp/yaml.h>

#include "config/resolve_steps.h"
#include "config/schema.h"
#include "core/strings.h"

namespace ts {

std::string canonical_yaml(const KeyTexts& texts) {
  YAML::Emitter em;
  em << YAML::BeginMap;
  std::vector<std::string> open_groups;
  for (const auto& spec : run_config_schema()) {
    auto it = texts.find(spec.key);
    if (it == texts.end()) continue;
    const std::vector<std::string> parts = split(spec.key, '.');
    const std::vector<std::string> groups(parts.begin(), parts.end() - 1);
    size_t common = 0;
    while (common < groups.size() && common < open_groups.size() && groups[common] == open_groups[common]) ++common;
    while (open_groups.size() > common) em << YAML::EndMap, open_groups.pop_back();
    for (size_t g = common; g < groups.size(); ++g)
      em << YAML::Key << groups[g] << YAML::Value << YAML::BeginMap, open_groups.push_back(groups[g]);
    em << YAML::Key << parts.back() << YAML::Value;
    if (spec.type == ValueType::string) em << YAML::DoubleQuoted << it->second;
    else em << it->second;
  }
  while (!open_groups.empty()) em << YAML::EndMap, open_groups.pop_back();
  em << YAML::EndMap;
  return std::string(em.c_str()) + "\n";
}

}  // namespace ts
