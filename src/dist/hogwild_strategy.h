// `hogwild` (docs/async.md): several threads of one
// process train replicas of the net that share ONE parameter arena, each on its own batches,
// and each applies its own optimizer step to the shared weights at once, without any lock
// (Niu, Recht, Re, Wright 2011). The concurrent read-modify-writes of the same floats are a data
// race by design: the algorithm tolerates lost and torn updates, sparse or not; no result of a
// run with more than one thread is reproducible bit for bit. This strategy is the main thread's
// (the timed loop's replica): it exchanges nothing, applies the update right after backward,
// and after the last step waits for the other replicas (train/hogwild_crew.h) so that the final
// evaluation and the run file see the final weights. One rank only (dist.workers 1).
#pragma once

#include <functional>
#include <vector>

#include "dist/exchange_strategy.h"
#include "dist/outside_peers.h"

namespace ts {

class HogwildExchange : public ExchangeStrategy, public OutsidePeers {
 public:
  // `after_last_step`: called after the update of step `total_steps` (the other replicas end).
  HogwildExchange(ModelArenas arenas, int64_t total_steps, std::function<void()> after_last_step);

  const char* name() const override { return "hogwild"; }
  ArenaTransport transport() const override { return ArenaTransport::host; }
  bool times_ps_phases() const override { return false; }
  void broadcast_model() override {}
  void begin_step(LocalLoss local_loss, RangeUpdate update) override;
  void gradients_ready(int64_t, int64_t) override {}  // the update comes after backward, whole
  StepVerdict finish_step(bool average_weights) override;
  void average_state() override {}
  const std::vector<Bucket>& buckets() const override { return buckets_; }
  void leave() override;

 private:
  const ModelArenas arenas_;
  const int64_t total_steps_;
  std::function<void()> after_last_step_;
  std::vector<Bucket> buckets_;
  int64_t step_ = 0;
  LocalLoss local_loss_{0.0f};
  RangeUpdate update_;
};

}  // namespace ts
