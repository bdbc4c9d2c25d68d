// The shares of the global batch during a run (see share_balancer.h).
#include "train/share_balancer.h"

#include "core/error.h"
#include "dist/batch_partition.h"

namespace ts {

ShareBalancer::ShareBalancer(const ShareOptions& options, int rank, int world, int64_t global_batch,
                             const ShareState* resumed)
    : options_(options), rank_(rank), world_(world), global_batch_(global_batch) {
  active_ = options_.heterogeneous && world > 1;
  if (resumed && !resumed->changes.empty()) {
    for (const ShareChange& c : resumed->changes)
      TS_CHECK(static_cast<int>(c.shares.size()) == world,
               "checkpoint: a share change for " + std::to_string(c.shares.size()) + " ranks, this run has " +
                   std::to_string(world));
    changes_ = resumed->changes;
    shares_ = changes_.back().shares;  // the latest decided, as after_step leaves them
    window_seconds_ = resumed->window_seconds;
    window_samples_ = resumed->window_samples;
    return;
  }
  shares_ = options_.partition == PartitionKind::static_ && static_cast<int>(options_.shares.size()) == world
                ? options_.shares
                : equal_shares(global_batch, world);
  changes_.push_back({1, shares_});
}

ShareBalancer::LoaderShares ShareBalancer::loader_shares(int64_t first_batch) const {
  // A change applies from batch step - 1 (steps count from 1, batches from 0).
  LoaderShares out;
  for (const ShareChange& c : changes_) {
    const auto mine = static_cast<size_t>(rank_);
    const int64_t batch = c.shares[mine], offset = share_offsets(c.shares)[mine];
    if (c.step - 1 <= first_batch) {
      out.batch = batch;
      out.offset = offset;
    } else {
      out.later.push_back({c.step - 1, batch, offset});
    }
  }
  return out;
}

int64_t ShareBalancer::max_share() const {
  if (options_.partition != PartitionKind::measured && options_.partition != PartitionKind::adaptive) return my_share();
  return global_batch_ - options_.share_quantum * (world_ - 1);
}

bool ShareBalancer::decides_after(int64_t step) const {
  if (!active_ || step < options_.calibration_steps) return false;
  if (options_.partition == PartitionKind::measured) return step == options_.calibration_steps;
  if (options_.partition == PartitionKind::adaptive) return (step - options_.calibration_steps) % options_.rebalance_steps == 0;
  return false;
}

void ShareBalancer::after_step(int64_t step, double compute_seconds, int64_t samples, Loader& loader, int prefetch,
                               int lookahead, Communicator& comm) {
  // The run's first step (first touch of memory, code generated on first use) is left out of
  // the first window when it has more steps.
  if (step > 1 || options_.calibration_steps == 1) {
    window_seconds_ += compute_seconds;
    window_samples_ += samples;
  }
  if (!decides_after(step)) return;
  // Each rank's samples/s over the window, in its own slot (the sum of zeros and one value is
  // exact, so every rank gets the same vector and decides the same shares).
  // The last slot counts the ranks that stage a batch ahead.
  std::vector<double> speed(static_cast<size_t>(world_) + 1, 0.0);
  speed[static_cast<size_t>(rank_)] = window_seconds_ > 0 ? static_cast<double>(window_samples_) / window_seconds_ : 0;
  speed.back() = lookahead > 0 ? 1.0 : 0.0;
  comm.allreduce_sum(speed.data(), world_ + 1);
  const int64_t any_lookahead = speed.back() > 0 ? 1 : 0;
  speed.pop_back();
  window_seconds_ = 0;
  window_samples_ = 0;
  const std::vector<int64_t> next = shares_by_speed(speed, global_batch_, options_.share_quantum);
  if (next == shares_) return;
  // The first batch no worker of any rank can have claimed (Loader::set_share) nor a staging
  // rank taken ahead: the same number on every rank, since every rank has taken the same steps.
  const int64_t from_batch = loader.position() - lookahead + any_lookahead + prefetch + 1;
  loader.set_share(next[static_cast<size_t>(rank_)], share_offsets(next)[static_cast<size_t>(rank_)], from_batch);
  shares_ = next;
  changes_.push_back({from_batch + 1, shares_});
}

}  // namespace ts
