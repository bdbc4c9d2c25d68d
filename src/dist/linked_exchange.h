// dist-internal: what the strategies that reach the arenas through an ArenaLink (sync, ps,
// weight_avg, device_sum) hold alike: the communicator, the arenas, the all-reduce algorithm,
// the bucket plan, the link, and the step's loss, update and times. Each adds its own exchange; those that exchange
// gradient buckets as backward produces them (sync, ps, device_sum) through a BucketPipeline
// (PipelinedExchange).
#pragma once

#include <memory>
#include <utility>

#include "dist/arena_link.h"
#include "dist/bucket_pipeline.h"
#include "dist/bucket_plan.h"
#include "dist/exchange_strategy.h"

namespace ts {

class LinkedExchange : public ExchangeStrategy {
 public:
  ArenaTransport transport() const override { return link_->transport(); }
  // The ps algorithm times its phases (the ps strategy; weight_avg with dist.allreduce ps).
  bool times_ps_phases() const override { return algorithm_ == AllreduceAlgorithm::ps; }
  void broadcast_model() override { link_->broadcast_model(comm_, arenas_); }
  void average_state() override { link_->average_state(comm_, algorithm_, arenas_); }
  const std::vector<Bucket>& buckets() const override { return plan_.buckets; }

 protected:
  // `marks_buckets`: the link has a mark slot per bucket (the strategy marks them while backward
  // runs); else none.
  LinkedExchange(Communicator& comm, const ModelArenas& arenas, BucketPlan plan, const ExchangeOptions& options,
                 bool marks_buckets)
      : comm_(comm),
        arenas_(arenas),
        algorithm_(options.algorithm),
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
  const AllreduceAlgorithm algorithm_;  // the buckets' and the state's (options.algorithm)
  const BucketPlan plan_;
  std::unique_ptr<ArenaLink> link_;
  // Per step (the communication thread touches them only while it owns a posted bucket).
  LocalLoss local_loss_{0.0f};
  RangeUpdate update_;
  ExchangeTimes times_;
};

// A LinkedExchange whose buckets go through a BucketPipeline: reduce_bucket runs on the
// communication thread with dist.overlap, else in the caller's thread after backward.
class PipelinedExchange : public LinkedExchange {
 public:
  void begin_step(LocalLoss local_loss, RangeUpdate update) override {
    start_step(std::move(local_loss), std::move(update));
    pipeline_.begin_step();
  }
  void gradients_ready(int64_t offset, int64_t count) override { pipeline_.gradients_ready(offset, count); }

 protected:
  PipelinedExchange(Communicator& comm, const ModelArenas& arenas, BucketPlan plan, const ExchangeOptions& options)
      : LinkedExchange(comm, arenas, std::move(plan), options, true),
        pipeline_(plan_, arenas.param_count, options.overlap ? PipelineMode::thread : PipelineMode::deferred,
                  [this](size_t i) { reduce_bucket(i); }, [this](size_t i) { link_->mark(i); }) {}
  // Exchanges bucket `index` of the plan (the communication thread's job, or inline).
  virtual void reduce_bucket(size_t index) = 0;
  // After backward: every bucket exchanged, the compute queued next ordered after their pushes.
  // `wait_backward`: device arenas wait for the rest of backward first (compute, not comm_wait).
  void complete_buckets(bool wait_backward) {
    if (wait_backward) link_->wait(link_->now_mark());
    times_.comm_wait += pipeline_.complete();
    times_.buckets = pipeline_.bucket_spans();
    link_->order_compute_after_pushes();
  }
  // The step of a strategy that averages every bucket on every rank (sync, device_sum): the
  // buckets complete, then every rank applies the update unless `verdict` says it diverged.
  // Device arenas: the rest of backward is compute, not comm_wait. One rank exchanges nothing,
  // so it does not wait (its update is queued behind backward; docs/gpu.md).
  StepVerdict finish_averaged_step(const VerdictStaging& verdict) {
    complete_buckets(comm_.size() > 1);
    StepVerdict v;
    verdict.read_verdict(v, comm_.size());
    if (!v.diverged) timed_update(update_, 0, arenas_.param_count, times_);
    v.times = times_;
    return v;
  }

  BucketPipeline pipeline_;
};

}  // namespace ts
