// Losses read at the trainer's boundaries (see loss_ledger.h).
#include "train/loss_ledger.h"

#include <cmath>

#include "core/error.h"
#include "dist/exchange_strategy.h"

namespace ts {

LossReads resolve_loss_reads(LossReads asked, bool staged_device, bool waits_for_device,
                             const ExchangeStrategy& exchange) {
  if (asked == LossReads::auto_)
    return staged_device && !waits_for_device && !exchange.combines_losses() ? LossReads::log : LossReads::step;
  if (asked == LossReads::log && exchange.combines_losses())
    throw ConfigError(std::string("'log' needs an exchange whose verdict is the rank's own loss, and ") +
                      exchange.name() + " on this run's ranks combines the losses every step; remove loss_reads or "
                      "set it to step");
  if (asked == LossReads::log && waits_for_device)
    throw ConfigError("'log' reads the loss every log_every steps only, and this rank reads it after each "
                      "forward (a heterogeneous device rank, or cuda.sync_phases); remove loss_reads or set it to step");
  return asked;
}

void LossLedger::hold(size_t record, int64_t loss_id) {
  TS_CHECK(!full(), "LossLedger::hold: " + std::to_string(held_.size()) + " losses held, the net keeps " +
                        std::to_string(Net::kLossSlots) + "; settle first");
  held_.push_back({record, loss_id});
}

int64_t LossLedger::settle(RunRecording& rec) {
  int64_t first_nonfinite = -1;
  for (const Held& h : held_) {
    const float loss = net_.loss_of(h.loss_id);
    rec.local_loss.at(h.record) = loss;
    if (!std::isfinite(loss) && first_nonfinite < 0) first_nonfinite = static_cast<int64_t>(h.record);
  }
  held_.clear();
  return first_nonfinite;
}

}  // namespace ts
