// A capability of the exchange strategies that combine a loss handed over on the device
// (LocalLoss::on_device) on the device, with no host wait in the step (nccl,
// dist/cuda/nccl_sync_strategy.h): their verdicts then carry StepVerdict::combined_id, and
// combined(id) waits for that step's exchange and gives its mean loss and communication time.
// loss_reads: log (train/loss_ledger.h). The trainer asks the strategy for it once at set-up
// (RunSetup::device_losses).
#pragma once

#include <cstdint>

namespace ts {

// What the device learned of a step once it has done it.
struct CombinedStep {
  double loss = 0;  // mean over ranks (the same bits on every rank)
  double comm = 0;  // seconds in communication (ExchangeTimes::comm)
};

class DeviceLossCombiner {
 public:
  virtual ~DeviceLossCombiner() = default;
  // The host must read a step before this many later steps have begun (the strategy keeps them).
  virtual int64_t combined_capacity() const = 0;
  virtual CombinedStep combined(int64_t id) = 0;
};

}  // namespace ts
