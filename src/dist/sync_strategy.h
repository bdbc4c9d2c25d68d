// dist-internal: `sync` gradient averaging, w -= lr * mean_i(g_i) (docs/strategies.md). Each
// gradient bucket is summed with the configured MPI all-reduce as soon as backward has produced
// it (overlap: on the communication thread while backward goes on), then scaled by 1/N; every
// rank applies the same update to all weights, so weights and velocities stay identical.
// Device arenas are reached through an ArenaLink (staged through pinned host memory, or a
// CUDA-aware MPI); `sync` with nccl is dist/cuda/nccl_sync_strategy.h. With dist.compression,
// each bucket (the tail too: its loss and verdict then travel in an all-reduce of their own) is
// exchanged by a Compressor, with error feedback, after the uncompressed warm-up steps.
#pragma once

#include <memory>

#include "dist/arena_link.h"
#include "dist/bucket_pipeline.h"
#include "dist/bucket_plan.h"
#include "dist/compressor.h"
#include "dist/error_feedback.h"
#include "dist/exchange_strategy.h"

namespace ts {

class SyncExchange : public ExchangeStrategy {
 public:
  SyncExchange(Communicator& comm, ModelArenas arenas, const ExchangeOptions& options);

  const char* name() const override { return "sync"; }
  ArenaTransport transport() const override { return link_->transport(); }
  bool times_ps_phases() const override { return false; }
  bool records_compression() const override { return compressor_ != nullptr; }
  void broadcast_model() override;
  void begin_step(LocalLoss local_loss, RangeUpdate update) override;
  void gradients_ready(int64_t offset, int64_t count) override;
  StepVerdict finish_step(bool average_weights) override;
  bool combines_losses() const override { return comm_.size() > 1; }
  void average_state() override;
  const std::vector<Bucket>& buckets() const override { return plan_.buckets; }
  bool replicas_identical() const override { return true; }
  // With compression: this rank's error-feedback memory (param_count floats, when on), then the
  // compressor's state (PowerSGD's warm-start Q). The step count comes back with it, so the
  // warm-up and the step-seeded compressors continue where they were.
  std::vector<float> checkpoint_state() const override;
  void restore_checkpoint_state(const std::vector<float>& state, int64_t steps_done) override;

 private:
  void reduce_bucket(size_t index);  // the communication thread's job (or inline)
  void compress_bucket(size_t index);

  Communicator& comm_;
  const ModelArenas arenas_;
  const AllreduceAlgorithm algorithm_;
  const BucketPlan plan_;
  std::unique_ptr<ArenaLink> link_;
  VerdictStaging staging_;  // the tail bucket + [loss, non-finite]
  BucketPipeline pipeline_;
  // Per step (the communication thread touches them only while it owns a posted bucket).
  LocalLoss local_loss_{0.0f};
  RangeUpdate update_;
  ExchangeTimes times_;
  // Compression (null / empty without it).
  std::unique_ptr<Compressor> compressor_;
  std::unique_ptr<ErrorFeedback> feedback_;
  std::vector<float> input_, sent_;  // one bucket: this rank's gradient + feedback, what it sent
  int64_t warmup_steps_ = 0;
  int64_t step_ = -1;                // steps begun by this strategy
};

}  // namespace ts
