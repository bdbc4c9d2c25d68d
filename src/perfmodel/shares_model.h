// Heterogeneous workers in the performance model (docs/model.md "Heterogeneous workers"): the
// share of the global batch each rank takes (dist.partition) and how much slower it computes
// (dist.emulate_slowdown). For measured and adaptive partitions the shares are those the
// trainer's rule (dist/batch_partition.h shares_by_speed) reaches from the ranks' predicted
// speeds: measured decides once from equal shares, adaptive re-decides from the shares it runs
// until they no longer change (as its re-balances would on a steady machine).
#pragma once

#include <cstdint>
#include <functional>
#include <vector>

#include "config/run_config.h"

namespace ts::perf {

struct RankLoads {
  std::vector<int64_t> shares;   // samples per step, one per rank, summing to the global batch
  std::vector<double> slowdown;  // compute-time factor per rank (1: none)
};

// The ranks' loads at `workers`. `compute_seconds(batch)`: one rank's forward + backward at that
// minibatch, before any slowdown. ConfigError when static shares do not fit `workers`.
RankLoads rank_loads(const RunConfig& c, int64_t workers, const std::function<double(int64_t batch)>& compute_seconds);

}  // namespace ts::perf
