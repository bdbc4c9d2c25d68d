// One data-parallel training step, the same for the trainer, the tests and the benchmarks:
//   batch (Loader) -> forward -> backward, each layer's gradients handed to the exchange as they
//   are final -> the exchange completes (all-reduce, parameter server or weight average) and
//   applies the optimizer step with this step's learning rate -> per-phase seconds.
// The caller owns the pieces (TrainState holds references) and decides the learning rate and
// when a periodic strategy averages.
#pragma once

#include <cstdint>
#include <vector>

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
  LossScaler* scaler = nullptr;  // mixed-precision loss scaling, enabled (null: none)
  StagedInput* staged = nullptr; // overlapped input copies (devices the host cannot address)
  int64_t step = 0;  // steps taken (train_step counts them)
  // Unequal shares of the global batch (docs/heterogeneous.md): > 0 makes
  // the step weight this rank's gradients and loss by batch x world / global_batch, so the mean
  // over ranks is the global batch's mean; 0: equal shares, no weighting.
  int64_t global_batch = 0;
  int world = 1;
  // dist.emulate_slowdown on this rank: after backward it sleeps (factor - 1) x its compute time.
  double slowdown = 1.0;
  // Wait for the device after forward (reading the loss) and after backward, so that `compute`
  // is the device's forward + backward and not the time to queue backward, and the phases split
  // exactly. Without it a staged rank waits once, for the loss once backward is queued (the
  // device never idles for the host mid-step). Heterogeneous runs set it on ranks that stage
  // input to a device: their shares and /partition's compute and idle seconds are decided and
  // recorded from it; cuda.sync_phases sets it too.
  bool wait_for_device = false;
  // loss_reads: log (train/loss_ledger.h): the step never reads its loss, and the trainer reads it
  // later by StepResult::loss_id. An exchange that combines losses must do so on the device
  // (dist/device_loss_combiner.h): it gets the loss's place there and its
  // verdict's combined_id; any other gets a stand-in.
  bool defer_loss = false;
};

struct StepResult {
  float local_loss = 0;   // this rank's loss on its batch (NaN when the step left it unread: defer_loss)
  int64_t loss_id = 0;    // the loss's number in the net (Net::loss_of)
  StepVerdict verdict;    // the exchange's: mean loss over ranks (when exchanged), diverged
  PhaseSeconds seconds{};  // this rank's time per phase
  bool skipped = false;    // loss scaling found a non-finite gradient: no update this step
  int64_t batch = 0;       // samples this rank took
  double compute = 0;      // forward + backward (+ the emulated slowdown), seconds
  ReadCounts reads;        // storage reads of the batch fetched in this step (/io/read_*)
  // Each bucket's exchange (ExchangeTimes::buckets), in seconds from the step's start on this rank.
  std::vector<BucketSpan> buckets;
};

// Takes one step with learning rate `lr`. A batch of another size than the net's re-plans the
// net first (unequal shares that change; the time is in the step, not in forward). `average_weights`: a strategy that averages weights
// periodically (weight_avg) averages this step. Collective: every rank calls it in step.
StepResult train_step(TrainState& state, double lr, bool average_weights);

}  // namespace ts
