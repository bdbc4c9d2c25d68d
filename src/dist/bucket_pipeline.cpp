// The gradient bucket pipeline (see bucket_pipeline.h).
#include "dist/bucket_pipeline.h"

#include <string>

#include "core/error.h"
#include "core/timer.h"

namespace ts {

BucketPipeline::BucketPipeline(const BucketPlan& plan, int64_t param_count, PipelineMode mode, ReduceBucket reduce,
                               MarkBucket mark)
    : plan_(plan),
      param_count_(param_count),
      mode_(mode),
      reduce_(std::move(reduce)),
      mark_(std::move(mark)),
      spans_(plan.buckets.size()) {
  if (mode == PipelineMode::thread)
    thread_ = std::make_unique<CommThread>([this](int64_t i) { reduce_timed(static_cast<size_t>(i)); });
}

void BucketPipeline::reduce_timed(size_t index) {
  spans_[index].start = now_seconds();
  reduce_(index);
  spans_[index].end = now_seconds();
}

void BucketPipeline::begin_step() {
  frontier_ = param_count_;
  posted_ = 0;
  if (thread_) thread_->reset();  // idle: the previous step waited for all of its buckets
}

void BucketPipeline::gradients_ready(int64_t offset, int64_t count) {
  if (offset < 0 || count < 0 || offset + count != frontier_)
    throw RuntimeError("gradient exchange: gradient range [" + std::to_string(offset) + ", " +
                       std::to_string(offset + count) + ") does not end where the previous one began (" +
                       std::to_string(frontier_) + "); ranges must arrive in reverse arena order");
  frontier_ = offset;
  if (mode_ != PipelineMode::deferred) post_ready();
}

// Marks (and, eager, reduces) every bucket that lies above the frontier; posts them to the
// thread. A mark is recorded before the thread may touch its bucket.
void BucketPipeline::post_ready() {
  const int64_t n = static_cast<int64_t>(plan_.buckets.size());
  while (posted_ < n && plan_.buckets[static_cast<size_t>(posted_)].first >= frontier_) {
    const size_t i = static_cast<size_t>(posted_++);
    if (mark_) mark_(i);
    if (mode_ == PipelineMode::eager) reduce_timed(i);
  }
  if (thread_) thread_->post_up_to(posted_);
}

double BucketPipeline::complete() {
  frontier_ = 0;
  const double t0 = now_seconds();
  const size_t first = static_cast<size_t>(posted_);
  post_ready();
  if (thread_) thread_->wait_all(static_cast<int64_t>(plan_.buckets.size()));
  if (mode_ == PipelineMode::deferred)
    for (size_t i = first; i < plan_.buckets.size(); ++i) reduce_timed(i);
  return now_seconds() - t0;
}

}  // namespace ts
