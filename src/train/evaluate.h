// train-internal: one evaluation pass over this rank's block of the test split, combined over
// ranks. Classification counts argmax hits; regression counts predictions within 0.5 of the
// target (the single-neuron task's threshold rule).
#pragma once

#include <cstdint>

#include "data/loader.h"
#include "dist/communicator.h"
#include "nn/net.h"

namespace ts {

struct EvalResult {
  double loss = 0;      // mean over every test sample of every rank
  double accuracy = 0;  // fraction correct
  int64_t device_used = 0;  // the device's used memory at the evaluation batch (0: a host backend)
};

// Runs the evaluation loader for one pass (inference mode) and restores the net's training
// batch `train_batch`. Collective.
EvalResult evaluate(Net& net, Loader& eval_loader, int64_t train_batch, Communicator& comm);

}  // namespace ts
