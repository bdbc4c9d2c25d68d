// dist-internal: `weight_avg`, weight averaging / local SGD (docs/strategies.md). Every rank
// applies its own optimizer step to its own gradients; when the caller says (every
// `dist.period` steps, before evaluations and at the end) the weights, the non-trainable state
// and the loss are averaged with the configured all-reduce. Velocities stay local. A non-finite
// loss is counted and reported at the next average (the rank skips its own updates until then).
// Device arenas are reached through an ArenaLink (staged, or a CUDA-aware MPI for algorithm mpi).
#pragma once

#include <memory>

#include "dist/arena_link.h"
#include "dist/bucket_plan.h"
#include "dist/exchange_strategy.h"

namespace ts {

class WeightAveragingExchange : public ExchangeStrategy {
 public:
  WeightAveragingExchange(Communicator& comm, ModelArenas arenas, const ExchangeOptions& options);

  const char* name() const override { return "weight_avg"; }
  ArenaTransport transport() const override { return link_->transport(); }
  bool times_ps_phases() const override { return algorithm_ == AllreduceAlgorithm::ps; }
  void broadcast_model() override;
  void begin_step(LocalLoss local_loss, RangeUpdate update) override;
  void gradients_ready(int64_t, int64_t) override {}  // weights are exchanged, not gradients
  StepVerdict finish_step(bool average_weights) override;
  void average_state() override;
  const std::vector<Bucket>& buckets() const override { return plan_.buckets; }
  std::vector<float> checkpoint_state() const override { return {nonfinite_since_average_}; }
  void restore_checkpoint_state(const std::vector<float>& state, int64_t steps_done) override;

 private:
  void average_weights();

  Communicator& comm_;
  const ModelArenas arenas_;
  const AllreduceAlgorithm algorithm_;
  const BucketPlan plan_;   // the weights are averaged in the same buckets
  std::unique_ptr<ArenaLink> link_;
  VerdictStaging staging_;  // the tail bucket, the state, then [loss, non-finite count]
  LocalLoss local_loss_{0.0f};
  float nonfinite_since_average_ = 0;
  RangeUpdate update_;
  ExchangeTimes times_;
};

}  // namespace ts
