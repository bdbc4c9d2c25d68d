// The run-config schema: every accepted key (dotted for nesting), in documentation order, with
// its type, default and accepted values. Accepted values of enum-like keys come from the
// registries of the modules that implement them (config/registries.h), so a new model, backend,
// data set or all-reduce algorithm needs no edit here. docs/config.md documents the same table.
#pragma once

#include <functional>
#include <map>
#include <string>
#include <vector>

namespace ts {

enum class ValueType { integer, number, boolean, string };
// "an integer", "a number", "true or false", "a string" (for messages).
const char* value_type_name(ValueType type);

struct KeySpec {
  std::string key;
  ValueType type;
  // The default's text. Empty: unset unless given (the exclusive groups batch_per_worker /
  // global_batch and epochs / steps / train_samples) or derived from other keys when resolved
  // (dataset.format: the data set's own format; gpu: any for backend cuda, else none).
  std::string def;
  // Accepted values of an enum-like key (asked when a value is checked); empty: any value.
  std::function<std::vector<std::string>()> accepted;
  std::string help;
};

// Every key, in documentation order (the canonical YAML's order too).
const std::vector<KeySpec>& run_config_schema();
const KeySpec* find_key_spec(const std::string& key);
// True when `prefix` names a group of keys ("dist", "lr_schedule").
bool is_key_group(const std::string& prefix);
// Every accepted dotted key, for --help, suggestions and sweep-file checks.
std::vector<std::string> run_config_keys();
// Keys of earlier versions that were removed: key -> why, and what to do instead.
const std::map<std::string, std::string>& removed_run_config_keys();

}  // namespace ts
