// train-internal: the shares of the global batch during a run (docs/heterogeneous.md).
// It starts from dist.partition's shares (equal, static, or equal while
// measured/adaptive calibrate), and for measured/adaptive decides new shares from each rank's
// measured samples/s: after dist.calibration_steps steps (measured: once; adaptive: then every
// dist.rebalance_steps steps). A decision is one small all-reduce outside the timed step, taken
// by every rank at the same step; the new shares apply from a batch number no loader worker has
// claimed yet (Loader::set_share), the same on every rank.
#pragma once

#include <cstdint>
#include <vector>

#include "data/loader.h"
#include "dist/batch_partition.h"
#include "dist/communicator.h"

namespace ts {

// What the balancer takes of dist.*, packed once by the trainer (train/phase_options.h).
struct ShareOptions {
  bool heterogeneous = false;  // DistConfig::heterogeneous(): shares may differ between ranks
  PartitionKind partition = PartitionKind::equal;
  std::vector<int64_t> shares;    // static: samples per step of each rank
  int64_t calibration_steps = 5;  // measured / adaptive: steps timed before the first balance
  int64_t rebalance_steps = 50;   // adaptive: steps between re-balances
  int64_t share_quantum = 1;      // measured / adaptive: shares are multiples of it
};

struct ShareChange {
  int64_t step = 0;             // the first step (1-based) that uses `shares`
  std::vector<int64_t> shares;  // one per rank
};

// What a checkpoint keeps of the balancer: every change so far (the latest may apply only from
// a later step) and this rank's measurement window since the last decision.
struct ShareState {
  std::vector<ShareChange> changes;
  double window_seconds = 0;
  int64_t window_samples = 0;
};

class ShareBalancer {
 public:
  // `resumed`: a checkpointed run's state (the shares it decided, its window), else the start.
  ShareBalancer(const ShareOptions& options, int rank, int world, int64_t global_batch,
                const ShareState* resumed = nullptr);

  // True when shares are not the equal split (or may change): the steps weight the gradients
  // by share and record /partition.
  bool active() const { return active_; }
  const std::vector<int64_t>& shares() const { return shares_; }  // current, one per rank
  int64_t my_share() const { return shares_[static_cast<size_t>(rank_)]; }
  // The largest share this rank may get (the loader's slots): the global batch less a quantum per other rank.
  int64_t max_share() const;
  // Every change of shares, the initial ones first (step 1).
  const std::vector<ShareChange>& changes() const { return changes_; }
  ShareState state() const { return {changes_, window_seconds_, window_samples_}; }
  // This rank's training loader from batch `first_batch` on: the share in force there
  // ({batch, offset} of `now`) and the decided changes that apply after it (`later`).
  struct LoaderShares {
    int64_t batch = 0, offset = 0;
    std::vector<LoaderOptions::ShareFrom> later;
  };
  LoaderShares loader_shares(int64_t first_batch) const;

  // After step `step` (1-based), which took `compute_seconds` for `samples` samples on this rank.
  // At a decision step: collective over `comm`; gives `loader` this rank's new share.
  // `lookahead`: batches this rank took from `loader` beyond its steps (1 where the next batch
  // is staged to a device while the step computes, else 0).
  void after_step(int64_t step, double compute_seconds, int64_t samples, Loader& loader, int prefetch,
                  int lookahead, Communicator& comm);

 private:
  bool decides_after(int64_t step) const;

  const ShareOptions options_;
  const int rank_, world_;
  const int64_t global_batch_;
  bool active_ = false;
  std::vector<int64_t> shares_;
  std::vector<ShareChange> changes_;
  double window_seconds_ = 0;  // compute time and samples since the last decision
  int64_t window_samples_ = 0;
};

}  // namespace ts
