// See shares_model.h.
#include "perfmodel/shares_model.h"

#include <string>

#include "core/error.h"
#include "dist/batch_partition.h"

namespace ts::perf {
namespace {

// Each rank's samples per second at its current share.
std::vector<double> speeds(const RankLoads& loads, const std::function<double(int64_t)>& compute_seconds) {
  std::vector<double> out;
  for (size_t r = 0; r < loads.shares.size(); ++r) {
    const double t = compute_seconds(loads.shares[r]) * loads.slowdown[r];
    out.push_back(t > 0 ? static_cast<double>(loads.shares[r]) / t : 0.0);
  }
  return out;
}

}  // namespace

RankLoads rank_loads(const RunConfig& c, int64_t workers, const std::function<double(int64_t)>& compute_seconds) {
  const DistConfig& d = c.dist;
  const int64_t global = c.global_batch_for(workers);
  RankLoads loads;
  loads.slowdown.assign(static_cast<size_t>(workers), 1.0);
  if (d.emulate_slowdown_rank >= 0 && d.emulate_slowdown_rank < workers)
    loads.slowdown[static_cast<size_t>(d.emulate_slowdown_rank)] = d.emulate_slowdown_factor;
  if (d.partition == PartitionKind::static_) {
    if (static_cast<int64_t>(d.shares.size()) != workers)
      throw ConfigError("dist.shares gives " + std::to_string(d.shares.size()) + " shares, and the prediction is for " +
                        std::to_string(workers) + " workers; predict static shares at their own worker count");
    loads.shares = d.shares;
    return loads;
  }
  if (global < workers)
    throw ConfigError("a global batch of " + std::to_string(global) + " cannot be shared by " + std::to_string(workers) +
                      " workers");
  loads.shares = equal_shares(global, static_cast<int>(workers));
  if (d.partition == PartitionKind::equal) return loads;
  // As the config check for the run's own worker count (config/partition_config.cpp), at each
  // count predicted: shares the trainer would refuse are not predicted either.
  const int64_t quantum = d.share_quantum;
  if (global % quantum != 0 || global < workers * quantum)
    throw ConfigError("dist.share_quantum: shares in multiples of " + std::to_string(quantum) + " need a global batch (" +
                      std::to_string(global) + ") that is a multiple of it and holds one per worker (" +
                      std::to_string(workers) + " predicted); predict other worker counts or choose another quantum");
  loads.shares = shares_by_speed(speeds(loads, compute_seconds), global, quantum);
  if (d.partition == PartitionKind::measured) return loads;
  for (int round = 0; round < 20; ++round) {  // adaptive: re-balance until the shares stand still
    const std::vector<int64_t> next = shares_by_speed(speeds(loads, compute_seconds), global, quantum);
    if (next == loads.shares) break;
    loads.shares = next;
  }
  return loads;
}

}  // namespace ts::perf
