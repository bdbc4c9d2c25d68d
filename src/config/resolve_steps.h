// config-internal: the steps of resolving a run config (run_config.cpp runs them in order):
//   canonical_texts   each given value type- and range-checked and spelled canonically;
//                     defaults filled;
//   resolve_rank_texts ranks.* items checked, filled from backend / threads;
//   derive_defaults   the exclusive groups' documented defaults, dataset.format from the data set,
//                     gpu from the backend (any for cuda, else none);
//   typed_config      texts -> RunConfig (enum-like keys become enums);
//   check_config_rules the refused combinations, config/rules.cpp (each value's range: canonical_texts);
//   resolve_eval_batch eval.batch 0 -> the training batch per worker;
//   canonical_yaml    the texts as nested YAML in schema order (hashed into the config_id).
#pragma once

#include <cstdint>
#include <map>
#include <string>
#include <vector>

#include "config/raw_values.h"
#include "config/run_config.h"

namespace ts {

using KeyTexts = std::map<std::string, std::string>;  // key -> canonical text, set keys only

KeyTexts canonical_texts(const RawValues& values, std::map<std::string, std::string>& where);
void derive_defaults(KeyTexts& texts);
RunConfig typed_config(const KeyTexts& texts);
void resolve_eval_batch(RunConfig& run, KeyTexts& texts);
// The per-rank keys ranks.backend and ranks.threads (rank_config.cpp): resolve_rank_texts runs
// after canonical_texts (items checked; an entry without the key takes backend / threads);
// read_rank_config in typed_config.
void resolve_rank_texts(KeyTexts& texts, const std::map<std::string, std::string>& where);
void read_rank_config(const KeyTexts& texts, RunConfig& run);
// The heterogeneous-worker keys dist.partition ... dist.hetero_allreduce (partition_config.cpp),
// read into run.dist; config/rules.cpp checks them.
void read_partition_config(const KeyTexts& texts, DistConfig& dist);
// The most samples one share may hold: the range of global_batch (so no sum of shares overflows).
constexpr int64_t kMostShare = int64_t{1} << 30;
// "96,32" -> {96, 32}; false for anything but comma-separated integers in 1..kMostShare.
bool parse_shares(const std::string& text, std::vector<int64_t>& shares);
// "; write e.g. dist: {shares: [64, 64]} in the YAML file, or --set ...": the equal shares of
// `global_batch`, spelled as the config gave dist.shares.
std::string shares_advice(const ResolvedConfig& cfg, int64_t global_batch);
std::string canonical_yaml(const KeyTexts& texts);

}  // namespace ts
