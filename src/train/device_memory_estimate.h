// The device half of a run's memory check (docs/reliability.md "Memory"): a backend that computes
// in device memory (cuda) holds the model, its optimizer state and the activations there, and a
// configuration that cannot fit would fail at its first large cudaMalloc. So before the real model
// is built, a probe copy is built and planned on the device at two small batches, the device's
// used memory (the driver's count: every buffer, workspace and library allocation) is read after
// each, and the line through them is extrapolated to the training and evaluation batches. The run
// is refused (exit 2) when the estimate exceeds the device memory free at the check, shared by the
// node's ranks on that device. The measured counterpart is the most device memory the run used
// above what was in use at the check (RunSetup::note_device_memory; /memory/device_peak_bytes).
#pragma once

#include <cstdint>
#include <map>
#include <string>

#include "backend/backend.h"
#include "nn/models.h"
#include "train/model_options.h"

namespace ts {

// Probe batches: larger than the host probe's, since the driver counts memory in pages (2 MiB)
// and the difference must span many of them.
constexpr int64_t kDeviceProbeBatchSmall = 4, kDeviceProbeBatchLarge = 16;

struct DeviceMemoryEstimate {
  bool applies = false;              // the backend computes in device memory
  int64_t parameters = 0;            // weight, gradient and state arenas, as building the model allocated them
  int64_t optimizer = 0;             // SGD momentum
  int64_t activations_train = 0;     // the net planned at the training batch: outputs, gradients, workspaces
  int64_t activations_eval = 0;      // ... at the evaluation batch (planned in turn with the training one)
  int64_t input = 0;                 // the two staged input buffers (StagedInput) at the training batch
  int64_t activation_per_sample = 0;
  int64_t used_at_check = 0;         // the device's used memory before the probe (context, libraries, others)
  std::string probe_error;           // the probe itself did not fit (the device's error); check_memory refuses

  int64_t total() const;
  std::map<std::string, int64_t> named() const;  // device_estimate_bytes, device_parameters_bytes, ...
  std::string text() const;  // "3.1 GiB (parameters 293 MiB, ...)"
};

struct DeviceMemoryBound {
  int64_t bytes = 0;   // 0: no device
  std::string source;  // in words: "cuda:0 (NVIDIA H200) has 139.2 GiB free of 139.8 GiB"
};

// Builds and plans a probe of `model` on `backend` (then drops it); `batch` is the most samples
// a step of this rank may take, `eval_batch` the evaluation's. A probe that does not fit itself
// (RuntimeError from the device) is recorded in probe_error, not thrown: the refusal is collective.
// `momentum` > 0: SGD keeps a momentum buffer.
DeviceMemoryEstimate estimate_device_memory(const ModelOptions& model, double momentum, Backend& backend,
                                            const ModelInput& input, int64_t batch, int64_t eval_batch);

// The device memory this rank may use: what is free now, shared by the `local_ranks` ranks of
// this node spread over the visible devices.
DeviceMemoryBound device_memory_bound(Backend& backend, int local_ranks);

}  // namespace ts
