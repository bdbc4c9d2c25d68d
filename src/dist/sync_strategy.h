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

#include "dist/compressor.h"
#include "dist/error_feedback.h"
#include "dist/linked_exchange.h"

namespace ts {

class SyncExchange : public PipelinedExchange {
 public:
  SyncExchange(Communicator& comm, ModelArenas arenas, const ExchangeOptions& options);

  const char* name() const override { return "sync"; }
  bool records_compression() const override { return compressor_ != nullptr; }
  void begin_step(LocalLoss local_loss, RangeUpdate update) override;
  StepVerdict finish_step(bool /*every step exchanges*/) override { return finish_averaged_step(staging_); }
  bool combines_losses() const override { return comm_.size() > 1; }
  bool replicas_identical() const override { return true; }
  // With compression: this rank's error-feedback memory (param_count floats, when on), then the
  // compressor's state (PowerSGD's warm-start Q). The step count comes back with it, so the
  // warm-up and the step-seeded compressors continue where they were.
  std::vector<float> checkpoint_state() const override;
  void restore_checkpoint_state(const std::vector<float>& state, int64_t steps_done) override;

 private:
  void reduce_bucket(size_t index) override;
  void compress_bucket(size_t index);

  VerdictStaging staging_;  // the tail bucket + [loss, non-finite]
  // Compression (null / empty without it).
  std::unique_ptr<Compressor> compressor_;
  std::unique_ptr<ErrorFeedback> feedback_;
  std::vector<float> input_, sent_;  // one bucket: this rank's gradient + feedback, what it sent
  int64_t warmup_steps_ = 0;
  int64_t step_ = -1;                // steps begun by this strategy
};

}  // namespace ts
