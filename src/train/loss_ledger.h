// train-internal: loss_reads (config/run_config.h LossReads). With `log` the step leaves its loss
// in the net's host slots (Net::loss_of) and the ledger holds the step's place in the recording;
// the trainer settles the held losses at its boundaries (a progress line, an evaluation, a
// checkpoint, a stop, the end, or a full ledger), so the host waits for the device there and
// nowhere else in the step. The divergence check moves with it: a non-finite loss is found at
// the next boundary, where the run stops; the steps in between ran (their updates applied) and
// stay recorded with their losses.
#pragma once

#include <cstdint>
#include <vector>

#include "config/run_config.h"
#include "nn/net.h"
#include "train/recording.h"

namespace ts {

class ExchangeStrategy;

// The reads a run makes: `asked` (auto: log on a single rank of sync whose device the host cannot
// address and that does not wait for its device each step anyway, step otherwise). Throws
// ConfigError for log where the exchange combines the losses every step.
LossReads resolve_loss_reads(LossReads asked, bool staged_device, bool waits_for_device,
                             const ExchangeStrategy& exchange);

class LossLedger {
 public:
  explicit LossLedger(const Net& net) : net_(net) {}
  // A step recorded at rec.local_loss[record] whose loss is the net's loss `loss_id`.
  void hold(size_t record, int64_t loss_id);
  // The net keeps the last Net::kLossSlots losses: settle before the next step when full.
  bool full() const { return static_cast<int64_t>(held_.size()) >= Net::kLossSlots; }
  // Reads the held losses into rec.local_loss and forgets them; the record index of the first
  // one that is not finite, or -1.
  int64_t settle(RunRecording& rec);

 private:
  struct Held {
    size_t record;
    int64_t loss_id;
  };
  const Net& net_;
  std::vector<Held> held_;
};

}  // namespace ts
