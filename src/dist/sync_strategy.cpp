// `sync` gradient averaging (see sync_strategy.h).
#include "dist/sync_strategy.h"

#include <cmath>

#include "core/error.h"
#include "core/timer.h"

namespace ts {

SyncExchange::SyncExchange(Communicator& comm, ModelArenas arenas, const ExchangeOptions& options)
    : PipelinedExchange(comm, arenas, BucketPlan::tile(arenas.param_count, options.bucket_elements), options),
      staging_(plan_.tail()) {
  const CompressionOptions& compression = options.compression;
  if (!compression.enabled()) return;
  compressor_ = make_compressor(compression, algorithm_, comm.rank());
  if (compression.error_feedback_on()) feedback_ = std::make_unique<ErrorFeedback>(arenas.param_count);
  input_.resize(static_cast<size_t>(plan_.largest()));
  sent_.resize(static_cast<size_t>(plan_.largest()));
  warmup_steps_ = compression.warmup_steps;
}

void SyncExchange::begin_step(LocalLoss local_loss, RangeUpdate update) {
  PipelinedExchange::begin_step(std::move(local_loss), std::move(update));
  ++step_;
}

// Sums one gradient bucket over ranks and scales it to the mean. The last bucket goes through
// the staging buffer with the loss and the non-finite flag.
void SyncExchange::reduce_bucket(size_t i) {
  const auto [offset, count] = plan_.buckets[i];
  if (comm_.size() == 1) {
    // One rank: its gradients are already the mean, so nothing moves (on a GPU a staged bucket
    // would travel to the host and back for nothing); only the verdict's loss is recorded.
    if (i + 1 == plan_.buckets.size()) staging_.set_loss(local_loss_.value());
    return;
  }
  link_->wait(i);  // device arenas: backward up to this bucket is compute, not communication
  const double t0 = now_seconds();
  if (compressor_ && step_ >= warmup_steps_) {
    compress_bucket(i);
  } else if (i + 1 < plan_.buckets.size()) {
    link_->average(comm_, algorithm_, Arena::grads, offset, count, i);
  } else {
    link_->pull(Arena::grads, offset, count, i);
    float* grads = link_->host(Arena::grads) + offset;
    copy_floats(staging_.data(), grads, count);
    staging_.set_loss(local_loss_.value());
    allreduce_sum(comm_, algorithm_, staging_.data(), staging_.size());
    if (comm_.size() > 1) scale(staging_.data(), count, 1.0f / static_cast<float>(comm_.size()));
    copy_floats(grads, staging_.data(), count);
    link_->push(Arena::grads, offset, count);
  }
  if (!compressor_ || step_ < warmup_steps_) times_.wire_bytes += static_cast<double>(count) * sizeof(float);
  times_.comm += now_seconds() - t0;
}

// One bucket through the compressor, with error feedback: the rank sends g + e and keeps what
// the compressed form left out. The tail's loss and verdict go in an all-reduce of their own.
void SyncExchange::compress_bucket(size_t i) {
  const auto [offset, count] = plan_.buckets[i];
  link_->pull(Arena::grads, offset, count, i);
  float* grads = link_->host(Arena::grads) + offset;
  if (feedback_) {
    feedback_->add_memory(offset, grads, count);
    copy_floats(input_.data(), grads, count);
  }
  CompressionCost cost;
  compressor_->exchange(comm_, {offset, count, i, step_}, grads, feedback_ ? sent_.data() : nullptr, cost);
  if (feedback_) feedback_->keep_residual(offset, input_.data(), sent_.data(), count);
  link_->push(Arena::grads, offset, count);
  if (i + 1 == plan_.buckets.size()) {
    staging_.set_loss(local_loss_.value());
    allreduce_sum(comm_, algorithm_, staging_.data() + count, staging_.size() - count);
  }
  times_.compress += cost.compress_s;
  times_.decompress += cost.decompress_s;
  times_.wire_bytes += static_cast<double>(cost.wire_bytes);
}

std::vector<float> SyncExchange::checkpoint_state() const {
  if (!compressor_) return {};
  std::vector<float> state = feedback_ ? feedback_->memory() : std::vector<float>{};
  const std::vector<float> own = compressor_->checkpoint_state();
  state.insert(state.end(), own.begin(), own.end());
  return state;
}

void SyncExchange::restore_checkpoint_state(const std::vector<float>& state, int64_t steps_done) {
  step_ = steps_done - 1;  // begin_step counts the next one as step `steps_done`
  if (!compressor_) {
    TS_CHECK(state.empty(), "checkpoint: sync without compression keeps no state, and the checkpoint holds " +
                                std::to_string(state.size()) + " values for it");
    return;
  }
  const int64_t memory = feedback_ ? arenas_.param_count : 0;
  TS_CHECK(static_cast<int64_t>(state.size()) >= memory,
           "checkpoint: " + std::to_string(state.size()) + " values for the compressed exchange, fewer than the " +
               std::to_string(memory) + " of its error-feedback memory (a checkpoint of another configuration?)");
  if (feedback_) feedback_->restore(state.data(), memory);
  compressor_->restore_checkpoint_state(plan_.buckets, std::vector<float>(state.begin() + memory, state.end()));
}

}  // namespace ts
