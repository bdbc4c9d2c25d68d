// Parsing and resolving a run config: the order of the steps (see run_config.h and
// resolve_steps.h).
#include "config/run_config.h"

#include <algorithm>

#include "config/raw_values.h"
#include "config/resolve_steps.h"
#include "config/rules.h"
#include "config/strict_yaml.h"
#include "core/error.h"
#include "core/file_io.h"

namespace ts {

std::string ResolvedConfig::locate(const std::string& key) const {
  auto it = where.find(key);
  const std::string w = it != where.end() ? it->second : origin + " (default)";
  return w + ": key '" + key + "'";
}

std::vector<BackendKind> RunConfig::backends() const {
  if (rank_backends.empty()) return {backend};
  std::vector<BackendKind> distinct;
  for (BackendKind b : rank_backends)
    if (std::find(distinct.begin(), distinct.end(), b) == distinct.end()) distinct.push_back(b);
  return distinct;
}

std::vector<std::string> RunConfig::backend_names() const {
  std::vector<std::string> names;
  for (BackendKind b : backends()) names.push_back(backend_kind_name(b));
  return names;
}

RunConfig RunConfig::for_rank(int rank) const {
  RunConfig mine = *this;
  const auto at = static_cast<size_t>(rank);
  if (at < rank_backends.size()) mine.backend = rank_backends[at];
  if (at < rank_threads.size()) mine.threads = rank_threads[at];
  if (mixed_backends() && !backend_has_gpu(mine.backend)) mine.gpu = GpuGeneration::none;
  return mine;
}

ResolvedConfig ResolvedConfig::for_rank(int rank) const {
  ResolvedConfig mine = *this;
  mine.run = run.for_rank(rank);
  const std::string entry = " (rank " + std::to_string(rank) + "'s entry)";
  for (const char* key : {"backend", "threads"})
    if (auto it = where.find(std::string("ranks.") + key); it != where.end()) mine.where[key] = it->second + entry;
  return mine;
}

namespace {

// read_yaml_values of the text given last (per thread): `sweep expand` resolves the same base
// config with other overrides for every run of a sweep, and parsing its YAML was a third of
// each run's time. The values are copied out, so the caller's overrides never reach the cache.
RawValues read_yaml_values_once(const std::string& yaml_text, const std::string& origin) {
  thread_local std::string last_text, last_origin;
  thread_local RawValues last_values;
  if (yaml_text != last_text || origin != last_origin || last_text.empty()) {
    last_values = read_yaml_values(yaml_text, origin);  // throws before the cache changes
    last_text = yaml_text;
    last_origin = origin;
  }
  return last_values;
}

}  // namespace

ResolvedConfig parse_run_config(const std::string& yaml_text, const std::string& origin,
                                const std::vector<std::string>& overrides) {
  RawValues values = read_yaml_values_once(yaml_text, origin);
  for (const auto& o : overrides) apply_override(values, o);
  ResolvedConfig out;
  out.origin = origin;
  KeyTexts texts = canonical_texts(values, out.where);
  resolve_rank_texts(texts, out.where);
  derive_defaults(texts);
  out.run = typed_config(texts);
  check_config_rules(out, texts, RuleScope::config);
  resolve_eval_batch(out.run, texts);
  out.yaml = canonical_yaml(texts);
  out.flat = std::move(texts);
  return out;
}

ResolvedConfig load_run_config(const std::string& path, const std::vector<std::string>& overrides) {
  const std::string text = read_config_text(path, "run config file (--config)");
  // An empty file is a careless mistake far more often than a wish for all defaults; `{}` says that.
  if (yaml_is_empty(load_yaml_strictly(text, path)))
    throw ConfigError(path + ": the run config is empty (no keys); write the keys (docs/config.md), or `{}` for "
                      "every default");
  return parse_run_config(text, path, overrides);
}

}  // namespace ts
