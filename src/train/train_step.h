// One data-parallel training step, the same for the trainer, the tests and the benchmarks:
//   batch (Loader) -> forward -> backward, each layer's gradients handed to the exchange as they
//   are final -> the exchange completes (all-reduce, parameter server or weight average) and
//   applies the optimizer step with this step's learning rate -> per-phase seconds.
// The caller owns the pieces (TrainState holds references) and decides the learning rate and
// when a periodic strategy averages.
#pragma once

#include <cstdint>

#include "data/loader.h"
#include "dist/exchange_strategy.h"
#include "nn/net.h"
#include "nn/optimizer.h"
#include "train/loss_scaler.h"
#include "train/phases.h"
#include "train/staged_input.h"

namespace ts {

struct TrainState {
  Net& net;
  Sgd& sgd;
  ExchangeStrategy& exchange;
  Loader& loader;  // the training batches of this rank
  LossScaler* scaler = nullptr;  // mixed-precision loss scaling (null or disabled: none)
  StagedInput* staged = nullptr; // overlapped input copies (devices the host cannot address)
  int64_t step = 0;  // steps taken (train_step counts them)
};

struct StepResult {
  float local_loss = 0;   // this rank's loss on its batch
  StepVerdict verdict;    // the exchange's: mean loss over ranks (when exchanged), diverged
  PhaseSeconds seconds{};  // this rank's time per phase
  bool skipped = false;    // loss scaling found a non-finite gradient: no update this step
  ReadCounts reads;        // storage reads of the batch fetched in this step (/io/read_*)
};

// Takes one step with learning rate `lr`. `average_weights`: a strategy that averages weights
// periodically (weight_avg) averages this step. Collective: every rank calls it in step.
StepResult train_step(TrainState& state, double lr, bool average_weights);

}  // namespace ts
