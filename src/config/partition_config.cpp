// The heterogeneous-worker keys of a run config (docs/distributed.md "Heterogeneous workers"):
// dist.partition and its settings, dist.emulate_slowdown, dist.hetero_allreduce; read into
// DistConfig and checked against the workers and the global batch (see resolve_steps.h).
#include <algorithm>
#include <charconv>
#include <numeric>

#include "config/resolve_steps.h"
#include "core/error.h"
#include "core/strings.h"

namespace ts {
namespace {

// The most samples one share may hold: the range of global_batch (so no sum of shares overflows).
constexpr int64_t kMostShare = int64_t{1} << 30;

// "96,32" -> {96, 32}; false for anything but comma-separated integers in 1..kMostShare.
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

int64_t int_of(const KeyTexts& t, const char* key, int64_t unset) {
  auto it = t.find(key);
  int64_t v = unset;
  if (it != t.end()) std::from_chars(it->second.data(), it->second.data() + it->second.size(), v);
  return v;
}

// A key that only the named partitions use, given with another: refused, like dist.period.
void check_only_for(const ResolvedConfig& cfg, const char* key, std::initializer_list<PartitionKind> kinds,
                    const std::string& kinds_text) {
  if (!cfg.where.count(key)) return;
  for (PartitionKind k : kinds)
    if (cfg.run.dist.partition == k) return;
  throw ConfigError(cfg.locate(key) + ": applies to dist.partition " + kinds_text + " only (this run's is " +
                    partition_kind_name(cfg.run.dist.partition) + "); remove it or set dist.partition");
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

void check_static_shares(const ResolvedConfig& cfg, const KeyTexts& texts, int64_t global_batch) {
  const std::vector<int64_t> example = equal_shares(global_batch, cfg.run.workers);
  const std::string write = "; write e.g. " + shares_spellings(cfg, example);
  if (!cfg.where.count("dist.shares"))
    throw ConfigError(cfg.locate("dist.partition") + ": static needs dist.shares, each rank's samples per step "
                      "summing to the global batch (" + std::to_string(global_batch) + ")" + write);
  std::vector<int64_t> shares;
  if (!parse_shares(texts.at("dist.shares"), shares))
    throw ConfigError(cfg.locate("dist.shares") + ": '" + texts.at("dist.shares") +
                      "' is not a list of integers in 1.." + std::to_string(kMostShare) + write);
  if (static_cast<int64_t>(shares.size()) != cfg.run.workers)
    throw ConfigError(cfg.locate("dist.shares") + ": " + std::to_string(shares.size()) + " shares for " +
                      std::to_string(cfg.run.workers) + " workers; give one share per rank (workers: " +
                      std::to_string(cfg.run.workers) + ")" + write);
  const int64_t sum = std::accumulate(shares.begin(), shares.end(), int64_t{0});
  if (sum != global_batch)
    throw ConfigError(cfg.locate("dist.shares") + ": the shares " + shares_text(shares) + " sum to " +
                      std::to_string(sum) + ", not to the global batch " + std::to_string(global_batch) +
                      "; make them sum to it (or change global_batch)" + write);
}

}  // namespace

void read_partition_config(const KeyTexts& t, DistConfig& d) {
  if (auto it = t.find("dist.partition"); it != t.end())
    for (PartitionKind k : all_partition_kinds())
      if (it->second == partition_kind_name(k)) d.partition = k;
  if (auto it = t.find("dist.shares"); it != t.end()) parse_shares(it->second, d.shares);
  d.calibration_steps = int_of(t, "dist.calibration_steps", d.calibration_steps);
  d.rebalance_steps = int_of(t, "dist.rebalance_steps", d.rebalance_steps);
  d.share_quantum = int_of(t, "dist.share_quantum", d.share_quantum);
  d.emulate_slowdown_rank = static_cast<int>(int_of(t, "dist.emulate_slowdown.rank", -1));
  if (auto it = t.find("dist.emulate_slowdown.factor"); it != t.end()) d.emulate_slowdown_factor = std::stod(it->second);
  if (auto it = t.find("dist.hetero_allreduce"); it != t.end()) d.hetero_allreduce_device = it->second == "device";
}

void check_partition_config(const ResolvedConfig& cfg, const KeyTexts& texts) {
  const RunConfig& r = cfg.run;
  const DistConfig& d = r.dist;
  const int64_t global_batch = r.global_batch > 0 ? r.global_batch : r.batch_per_worker * r.workers;
  using P = PartitionKind;
  check_only_for(cfg, "dist.shares", {P::static_}, "static");
  check_only_for(cfg, "dist.calibration_steps", {P::measured, P::adaptive}, "measured or adaptive");
  check_only_for(cfg, "dist.share_quantum", {P::measured, P::adaptive}, "measured or adaptive");
  check_only_for(cfg, "dist.rebalance_steps", {P::adaptive}, "adaptive");
  if (cfg.where.count("dist.emulate_slowdown.factor") && !cfg.where.count("dist.emulate_slowdown.rank"))
    throw ConfigError(cfg.locate("dist.emulate_slowdown.factor") +
                      ": says how much slower, but not which rank; add dist.emulate_slowdown.rank");
  if (d.emulate_slowdown_rank >= r.workers)
    throw ConfigError(cfg.locate("dist.emulate_slowdown.rank") + ": rank " + std::to_string(d.emulate_slowdown_rank) +
                      " does not exist among " + std::to_string(r.workers) + " workers; use 0.." +
                      std::to_string(r.workers - 1));
  if (d.partition == P::equal) return;
  if (d.partition == P::static_) return check_static_shares(cfg, texts, global_batch);
  if (global_batch % d.share_quantum != 0 || global_batch < d.share_quantum * r.workers)
    throw ConfigError(cfg.locate(cfg.where.count("dist.share_quantum") ? "dist.share_quantum" : "dist.partition") +
                      ": shares in multiples of " + std::to_string(d.share_quantum) + " need a global batch (" +
                      std::to_string(global_batch) + ") that is a multiple of it and holds one per worker (" +
                      std::to_string(r.workers) + "); choose another dist.share_quantum or global_batch");
}

}  // namespace ts
