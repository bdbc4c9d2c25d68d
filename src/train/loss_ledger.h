// train-internal: loss_reads (config/run_enums.h LossReads). With `log` the step leaves its loss
// in the net's host slots (Net::loss_of) and the ledger holds the step's place in the recording;
// the trainer settles the held losses at its boundaries (a progress line, an evaluation, a
// checkpoint, a stop, the end, or a full ledger), so the host waits for the device there and
// nowhere else in the step. The divergence check moves with it: a non-finite loss is found at
// the next boundary, where the run stops; the steps in between ran (their updates applied) and
// stay recorded with their losses.
// Where the exchange combines the losses on the device (nccl: dist/device_loss_combiner.h), a
// held step also carries its combined id: settling reads the mean
// over ranks and the step's communication seconds from the exchange, and the divergence check is
// made on the mean, which every rank reads alike, so every rank stops at the same boundary.
#pragma once

#include <cstdint>
#include <vector>

#include "config/run_enums.h"
#include "dist/device_loss_combiner.h"
#include "nn/net.h"
#include "train/recording.h"

namespace ts {

class ExchangeStrategy;

// The reads a run makes: `asked` (auto: log on a single rank of sync whose device the host cannot
// address and that does not wait for its device each step anyway, step otherwise; an exchange
// that combines the losses on the device, `device_losses` not null, takes log only when asked).
// Throws ConfigError for log where the exchange combines the losses every step on the host, or
// the rank waits for its device each step.
LossReads resolve_loss_reads(LossReads asked, bool staged_device, bool waits_for_device,
                             const ExchangeStrategy& exchange, const DeviceLossCombiner* device_losses);

class LossLedger {
 public:
  // `device_losses`: the exchange's, where it combines the losses on the device (else null).
  LossLedger(const Net& net, DeviceLossCombiner* device_losses);
  // A step recorded at rec.local_loss[record] whose loss is the net's loss `loss_id` and, when
  // the exchange combined it on the device, whose mean is the exchange's `combined_id` (0: none).
  void hold(size_t record, int64_t loss_id, int64_t combined_id = 0);
  // The net keeps the last Net::kLossSlots losses, the exchange its combined_capacity(): settle
  // before the next step when full.
  bool full() const { return static_cast<int64_t>(held_.size()) >= capacity_; }
  // The first held step whose loss (the mean over ranks, when combined) was not finite.
  struct Nonfinite {
    int64_t record = -1;  // -1: none
    double loss = 0;
    bool combined = false;
  };
  // Reads the held losses into rec.local_loss (and the combined steps' communication seconds into
  // rec.seconds) and forgets them.
  Nonfinite settle(RunRecording& rec);
  // The loss of the last step settled: the mean over ranks when the exchange combined it, else
  // this rank's (last_combined() says which).
  double last_loss() const { return last_loss_; }
  bool last_combined() const { return last_combined_; }

 private:
  struct Held {
    size_t record;
    int64_t loss_id, combined_id;
  };
  const Net& net_;
  DeviceLossCombiner* device_losses_;
  int64_t capacity_;
  std::vector<Held> held_;
  double last_loss_ = 0;
  bool last_combined_ = false;
};

}  // namespace ts
