// dist-internal: what the strategies that reach the arenas through an ArenaLink (sync, ps,
// weight_avg, device_sum) hold alike: the communicator, the arenas, the bucket plan, the link,
// and the step's loss, update and times. Each adds its own exchange.
#pragma once

#include <memory>
#include <utility>

#include "dist/arena_link.h"
#include "dist/bucket_plan.h"
#include "dist/exchange_strategy.h"

namespace ts {

class LinkedExchange : public ExchangeStrategy {
 public:
  ArenaTransport transport() const override { return link_->transport(); }
  void broadcast_model() override { link_->broadcast_model(comm_, arenas_); }
  const std::vector<Bucket>& buckets() const override { return plan_.buckets; }

 protected:
  // `marks_buckets`: the link has a mark slot per bucket (the strategy marks them while backward
  // runs); else none.
  LinkedExchange(Communicator& comm, const ModelArenas& arenas, BucketPlan plan, const ExchangeOptions& options,
                 bool marks_buckets)
      : comm_(comm),
        arenas_(arenas),
        plan_(std::move(plan)),
        link_(make_arena_link(arenas, options, marks_buckets ? plan_.buckets.size() : 0)) {}
  // A new step: its loss and update; the times start from zero.
  void start_step(LocalLoss local_loss, RangeUpdate update) {
    local_loss_ = std::move(local_loss);
    update_ = std::move(update);
    times_ = ExchangeTimes{};
  }

  Communicator& comm_;
  const ModelArenas arenas_;
  const BucketPlan plan_;
  std::unique_ptr<ArenaLink> link_;
  // Per step (the communication thread touches them only while it owns a posted bucket).
  LocalLoss local_loss_{0.0f};
  RangeUpdate update_;
  ExchangeTimes times_;
};

}  // namespace ts
