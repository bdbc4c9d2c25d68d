// dist-internal: `weight_avg`, weight averaging / local SGD (docs/strategies.md). Every rank
// applies its own optimizer step to its own gradients; when the caller says (every
// `dist.period` steps, before evaluations and at the end) the weights, the non-trainable state
// and the loss are averaged with the configured all-reduce. Velocities stay local. A non-finite
// loss is counted and reported at the next average (the rank skips its own updates until then).
// Device arenas are reached through an ArenaLink (staged, or a CUDA-aware MPI for algorithm mpi).
#pragma once

#include <memory>

#include "dist/linked_exchange.h"

namespace ts {

class WeightAveragingExchange : public LinkedExchange {
 public:
  WeightAveragingExchange(Communicator& comm, ModelArenas arenas, const ExchangeOptions& options);

  const char* name() const override { return "weight_avg"; }
  void begin_step(LocalLoss local_loss, RangeUpdate update) override {
    start_step(std::move(local_loss), std::move(update));
  }
  void gradients_ready(int64_t, int64_t) override {}  // weights are exchanged, not gradients
  StepVerdict finish_step(bool average_weights) override;
  std::vector<float> checkpoint_state() const override { return {nonfinite_since_average_}; }
  void restore_checkpoint_state(const std::vector<float>& state, int64_t steps_done) override;

 private:
  void average_weights();

  VerdictStaging staging_;  // the tail bucket, the state, then [loss, non-finite count]
  float nonfinite_since_average_ = 0;
};

}  // namespace ts
