// Losses read at the trainer's boundaries (see loss_ledger.h).
#include "train/loss_ledger.h"

#include <algorithm>
#include <cmath>
#include <string>

#include "core/error.h"
#include "dist/exchange_strategy.h"

namespace ts {

LossReads resolve_loss_reads(LossReads asked, bool staged_device, bool waits_for_device,
                             const ExchangeStrategy& exchange, const DeviceLossCombiner* device_losses) {
  const bool on_host = exchange.combines_losses() && !device_losses;
  if (asked == LossReads::auto_)  // nccl keeps step until its deferred verdicts are measured on GPUs
    return staged_device && !waits_for_device && !exchange.combines_losses() ? LossReads::log : LossReads::step;
  if (asked == LossReads::log && on_host)
    throw ConfigError(std::string("'log' needs an exchange whose verdict is the rank's own loss or that combines the "
                                  "losses on the device (dist.allreduce nccl), and ") +
                      exchange.name() + " on this run's ranks combines the losses on the host every step; remove "
                      "loss_reads or set it to step");
  if (asked == LossReads::log && waits_for_device)
    throw ConfigError("'log' reads the loss every log_every steps only, and this rank reads it after each "
                      "forward (a heterogeneous device rank, or cuda.sync_phases); remove loss_reads or set it to step");
  return asked;
}

LossLedger::LossLedger(const Net& net, DeviceLossCombiner* device_losses)
    : net_(net),
      device_losses_(device_losses),
      capacity_(device_losses ? std::min(Net::kLossSlots, device_losses->combined_capacity()) : Net::kLossSlots) {
  TS_CHECK(capacity_ > 0, "LossLedger: the exchange keeps no combined steps");
}

void LossLedger::hold(size_t record, int64_t loss_id, int64_t combined_id) {
  TS_CHECK(!full(), "LossLedger::hold: " + std::to_string(held_.size()) + " losses held, the net and exchange keep " +
                        std::to_string(capacity_) + "; settle first");
  held_.push_back({record, loss_id, combined_id});
}

LossLedger::Nonfinite LossLedger::settle(RunRecording& rec) {
  Nonfinite first;
  for (const Held& h : held_) {
    const float loss = net_.loss_of(h.loss_id);
    rec.local_loss.at(h.record) = loss;
    last_loss_ = loss;
    last_combined_ = h.combined_id > 0;
    if (last_combined_) {
      TS_CHECK(device_losses_, "LossLedger: a combined step of an exchange that does not combine on the device");
      const CombinedStep c = device_losses_->combined(h.combined_id);
      rec.seconds[static_cast<size_t>(Phase::comm)].at(h.record) = static_cast<float>(c.comm);
      last_loss_ = c.loss;
    }
    if (!std::isfinite(last_loss_) && first.record < 0) first = {static_cast<int64_t>(h.record), last_loss_, last_combined_};
  }
  held_.clear();
  return first;
}

}  // namespace ts
