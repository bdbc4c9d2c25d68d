// dist-internal, shared by the gradient strategies (sync, ps, nccl): hands gradient buckets to
// a reduction as backward produces them. It tracks the frontier (gradients [frontier, P) are
// final), posts every bucket that lies above it, and reduces them on a communication thread
// while backward goes on (overlap), in the caller's thread as they become final (a reduction
// that only queues device work, NCCL), or all in the caller's thread at the end. Before a
// bucket is handed on, `mark` runs for it in the caller's thread: device arenas record there
// how far the compute stream has come (dist/arena_link.h). It times each bucket's reduction
// (bucket_spans(): the trace's per-bucket events, /bucket_timing in the run file).
#pragma once

#include <cstdint>
#include <functional>
#include <memory>
#include <vector>

#include "dist/bucket_plan.h"
#include "dist/comm_thread.h"
#include "dist/exchange_strategy.h"

namespace ts {

enum class PipelineMode {
  thread,    // reduce on the communication thread as buckets become final (overlap)
  eager,     // reduce in the caller's thread as buckets become final (the reduction only queues)
  deferred,  // reduce in the caller's thread after backward (no overlap)
};

class BucketPipeline {
 public:
  // Reduces bucket `index` of the plan (on the communication thread in mode thread).
  using ReduceBucket = std::function<void(size_t index)>;
  // Runs in the caller's thread when bucket `index` has become final, before it is reduced.
  using MarkBucket = std::function<void(size_t index)>;
  BucketPipeline(const BucketPlan& plan, int64_t param_count, PipelineMode mode, ReduceBucket reduce,
                 MarkBucket mark = {});

  // A new step: nothing final yet.
  void begin_step();
  // Gradients [offset, offset + count) are final; they must end where the previous range began
  // (RuntimeError otherwise: ranges arrive in reverse arena order).
  void gradients_ready(int64_t offset, int64_t count);
  // Every bucket reduced (or, eager, queued): posts the rest and waits for the thread, or
  // reduces them here. Returns the seconds the caller's thread spent in it (comm_wait).
  double complete();
  // When each bucket of this step was reduced (queued, eager), in bucket order; complete once
  // complete() has returned.
  const std::vector<BucketSpan>& bucket_spans() const { return spans_; }

 private:
  void post_ready();
  void reduce_timed(size_t index);  // reduce_, timed into spans_ (one thread at a time writes it)
  const BucketPlan& plan_;
  const int64_t param_count_;
  const PipelineMode mode_;
  ReduceBucket reduce_;
  MarkBucket mark_;
  int64_t frontier_ = 0;  // gradients [frontier_, param_count) are final
  int64_t posted_ = 0;    // buckets final and marked this step (eager: also reduced)
  std::vector<BucketSpan> spans_;        // [buckets]: this step's, written before complete() returns
  std::unique_ptr<CommThread> thread_;  // overlap only
};

}  // namespace ts
