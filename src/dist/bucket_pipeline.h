// dist-internal, shared by the gradient strategies (sync, ps): hands gradient buckets to a
// reduction as backward produces them. It tracks the frontier (gradients [frontier, P) are
// final), posts every bucket that lies above it, and reduces them on a communication thread
// while backward goes on (overlap), or all in the caller's thread at the end.
#pragma once

#include <cstdint>
#include <functional>
#include <memory>

#include "dist/bucket_plan.h"
#include "dist/comm_thread.h"

namespace ts {

class BucketPipeline {
 public:
  // Reduces bucket `index` of the plan (on the communication thread when `overlap`).
  using ReduceBucket = std::function<void(size_t index)>;
  BucketPipeline(const BucketPlan& plan, int64_t param_count, bool overlap, ReduceBucket reduce);

  // A new step: nothing final yet.
  void begin_step();
  // Gradients [offset, offset + count) are final; they must end where the previous range began
  // (RuntimeError otherwise: ranges arrive in reverse arena order).
  void gradients_ready(int64_t offset, int64_t count);
  // Every bucket reduced: posts the rest and waits for the thread, or reduces them all here.
  // Returns the seconds the caller's thread spent in it (comm_wait).
  double complete();

 private:
  void post_ready();
  const BucketPlan& plan_;
  const int64_t param_count_;
  ReduceBucket reduce_;
  int64_t frontier_ = 0;  // gradients [frontier_, param_count) are final
  int64_t posted_ = 0;    // buckets handed out this step
  std::unique_ptr<CommThread> thread_;  // overlap only
};

}  // namespace ts
