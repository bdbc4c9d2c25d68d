// config-internal: the steps of resolving a run config (run_config.cpp runs them in order):
//   canonical_texts   each given value type- and range-checked and spelled canonically;
//                     defaults filled;
//   resolve_rank_texts ranks.* items checked, filled from backend / threads;
//   derive_defaults   the exclusive groups' documented defaults, dataset.format from the data set,
//                     gpu from the backend (any for cuda, else none);
//   typed_config      texts -> RunConfig (enum-like keys become enums);
//   check_run_config  impossible combinations (each value's range: canonical_texts);
//   resolve_eval_batch eval.batch 0 -> the training batch per worker;
//   canonical_yaml    the texts as nested YAML in schema order (hashed into the config_id).
#pragma once

#include <map>
#include <string>

#include "config/raw_values.h"
#include "config/run_config.h"

namespace ts {

using KeyTexts = std::map<std::string, std::string>;  // key -> canonical text, set keys only

KeyTexts canonical_texts(const RawValues& values, std::map<std::string, std::string>& where);
void derive_defaults(KeyTexts& texts);
RunConfig typed_config(const KeyTexts& texts);
// ConfigError naming the key (cfg.locate) for a value out of range or a combination that
// cannot run; `texts` gives the values as written.
void check_run_config(const ResolvedConfig& cfg, const KeyTexts& texts);
void resolve_eval_batch(RunConfig& run, KeyTexts& texts);
// The per-rank keys ranks.backend and ranks.threads (rank_config.cpp): resolve_rank_texts runs
// after canonical_texts (items checked; an entry without the key takes backend / threads);
// read_rank_config in typed_config; check_rank_config against the workers and the strategy.
void resolve_rank_texts(KeyTexts& texts, const std::map<std::string, std::string>& where);
void read_rank_config(const KeyTexts& texts, RunConfig& run);
void check_rank_config(const ResolvedConfig& cfg);
// The heterogeneous-worker keys dist.partition ... dist.hetero_allreduce (partition_config.cpp):
// read into run.dist, and checked (shares against workers and the global batch).
void read_partition_config(const KeyTexts& texts, DistConfig& dist);
void check_partition_config(const ResolvedConfig& cfg, const KeyTexts& texts);
std::string canonical_yaml(const KeyTexts& texts);

}  // namespace ts
