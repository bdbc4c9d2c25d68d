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

// The values a numeric key accepts: lo..hi, each end open or closed. Every numeric key has one
// (docs/config.md lists them): beyond it a value is refused when the config is read, so no
// count, size or product of them can overflow, and no run allocates for an absurd value.
struct ValueRange {
  double lo = 0, hi = 0;
  bool lo_open = false, hi_open = false;
  bool bounded = false;  // false: any value (keys that are not numbers)
};
// "1..1024" (integers), "(0, 1e+06]" (numbers); "" for an unbounded range.
std::string range_text(ValueType type, const ValueRange& range);
// "" when `value` lies in `range`, else "must be > 0" / "must be at most 1024" / ...
std::string range_problem(const ValueRange& range, double value);

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
  ValueRange range;  // numeric keys: the accepted values
  // A string key that also takes a YAML list of scalars (`dist.shares: [96, 32]`), read as the
  // items joined by commas ("96,32"; --set takes that spelling).
  bool list = false;
};

// Every key, in documentation order (the canonical YAML's order too).
const std::vector<KeySpec>& run_config_schema();
const KeySpec* find_key_spec(const std::string& key);
// True when `prefix` names a group of keys ("dist", "lr_schedule").
bool is_key_group(const std::string& prefix);

// Keys of which a config gives at most one: batch_per_worker | global_batch (the batch),
// epochs | steps | train_samples (the run's length). An override of one replaces the others of
// its group that the YAML gave (--set steps=150 on a config with epochs); two overrides of one
// group, or a YAML that gives two, are refused.
const std::vector<std::vector<std::string>>& exclusive_key_groups();
// Every accepted dotted key, for --help, suggestions and sweep-file checks.
std::vector<std::string> run_config_keys();
// Keys of earlier versions that were removed: key -> why, and what to do instead.
const std::map<std::string, std::string>& removed_run_config_keys();

}  // namespace ts
