// The heterogeneous-worker keys of a run config (docs/heterogeneous.md):
// dist.partition and its settings, dist.emulate_slowdown, dist.hetero_allreduce, read into
// DistConfig (see resolve_steps.h); config/rules.cpp checks them against the workers and the
// global batch.
#include <algorithm>
#include <charconv>

#include "config/enums.h"
#include "config/resolve_steps.h"
#include "core/strings.h"

namespace ts {

bool parse_shares(const std::string& text, std::vector<int64_t>& shares) {
  shares.clear();
  for (const std::string& item : split(text, ',')) {
    const std::string t = trim(item);
    int64_t v = 0;
    const auto res = std::from_chars(t.data(), t.data() + t.size(), v);
    if (t.empty() || res.ec != std::errc() || res.ptr != t.data() + t.size() || v < 1 || v > kMostShare) return false;
    shares.push_back(v);
  }
  return !shares.empty();
}

namespace {

int64_t int_of(const KeyTexts& t, const char* key, int64_t unset) {
  auto it = t.find(key);
  int64_t v = unset;
  if (it != t.end()) std::from_chars(it->second.data(), it->second.data() + it->second.size(), v);
  return v;
}

// How to write `shares` in both places a value may come from, the one it came from first:
// "dist.shares: [96, 32] in the YAML file (or --set dist.shares=96,32, or --set 'dist.shares=[96, 32]')".
std::string shares_spellings(const ResolvedConfig& cfg, const std::vector<int64_t>& shares) {
  constexpr size_t kMostShown = 8;  // a long list is shown by its start (thousands of workers)
  const std::vector<int64_t> shown(shares.begin(), shares.begin() + static_cast<long>(std::min(shares.size(), kMostShown)));
  const std::string more = shares.size() > kMostShown ? ",..." : "";
  const std::string items = shares_text(shown) + more, yaml_items = join(split(items, ','), ", ");
  const std::string yaml = "dist: {shares: [" + yaml_items + "]} in the YAML file";
  const std::string set = "--set dist.shares=" + items + " (or --set 'dist.shares=[" + yaml_items + "]')";
  auto it = cfg.where.find("dist.shares");
  const bool from_set = it != cfg.where.end() && it->second.rfind("--set ", 0) == 0;
  return from_set ? set + ", or " + yaml : yaml + ", or " + set;
}

}  // namespace

std::string shares_advice(const ResolvedConfig& cfg, int64_t global_batch) {
  return "; write e.g. " + shares_spellings(cfg, equal_shares(global_batch, cfg.run.workers));
}

void read_partition_config(const KeyTexts& t, DistConfig& d) {
  if (auto it = t.find("dist.partition"); it != t.end())
    d.partition = enum_from_name(all_partition_kinds(), partition_kind_name, it->second, "dist.partition");
  if (auto it = t.find("dist.shares"); it != t.end()) parse_shares(it->second, d.shares);
  d.calibration_steps = int_of(t, "dist.calibration_steps", d.calibration_steps);
  d.rebalance_steps = int_of(t, "dist.rebalance_steps", d.rebalance_steps);
  d.share_quantum = int_of(t, "dist.share_quantum", d.share_quantum);
  d.emulate_slowdown_rank = static_cast<int>(int_of(t, "dist.emulate_slowdown.rank", -1));
  if (auto it = t.find("dist.emulate_slowdown.factor"); it != t.end()) d.emulate_slowdown_factor = std::stod(it->second);
  if (auto it = t.find("dist.hetero_allreduce"); it != t.end()) d.hetero_allreduce_device = it->second == "device";
}

}  // namespace ts
