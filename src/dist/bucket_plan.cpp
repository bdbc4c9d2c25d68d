// Bucket plan, verdict staging and the strategies' small helpers (see bucket_plan.h).
#include "dist/bucket_plan.h"

#include <algorithm>
#include <cmath>
#include <cstring>

#include "core/timer.h"

namespace ts {
namespace {
constexpr int64_t kMaxTail = 16384;  // floats in the staged last bucket, at most
}  // namespace

int64_t BucketPlan::largest() const {
  int64_t most = 0;
  for (const Bucket& b : buckets) most = std::max(most, b.second);
  return most;
}

BucketPlan BucketPlan::tile(int64_t param_count, int64_t bucket_elements) {
  BucketPlan plan;
  const int64_t bucket = std::max<int64_t>(1, bucket_elements);
  const int64_t tail = std::min({bucket, kMaxTail, param_count});
  for (int64_t top = param_count; top > tail; top -= bucket) {
    const int64_t begin = std::max(tail, top - bucket);
    plan.buckets.emplace_back(begin, top - begin);
  }
  plan.buckets.emplace_back(0, tail);  // staged with the loss (count 0 without parameters)
  return plan;
}

void VerdictStaging::set_extras(float loss, float nonfinite) {
  float* extras = data_.data() + data_.size() - kExtras;
  extras[0] = loss;
  extras[1] = nonfinite;
}

void VerdictStaging::read_verdict(StepVerdict& v, int world) const {
  const float* extras = data_.data() + data_.size() - kExtras;
  verdict_of_means(v, static_cast<double>(extras[0]) / world, extras[1]);
}

void verdict_of_means(StepVerdict& v, double mean_loss, float mean_nonfinite) {
  v.exchanged = true;
  v.loss = mean_loss;
  v.diverged = mean_nonfinite > 0 || !std::isfinite(v.loss);
}

void copy_floats(float* dst, const float* src, int64_t count) {
  if (count > 0) std::memcpy(dst, src, static_cast<size_t>(count) * sizeof(float));
}

void timed_update(const RangeUpdate& update, int64_t offset, int64_t count, ExchangeTimes& times) {
  const double t0 = now_seconds();
  update(offset, count);
  times.optimizer += now_seconds() - t0;
}

void average_over_ranks(Communicator& comm, AllreduceAlgorithm algorithm, float* data, int64_t count, PsTimings* ps) {
  if (count == 0) return;
  allreduce_sum(comm, algorithm, data, count, ps);
  if (comm.size() > 1) scale(data, count, 1.0f / static_cast<float>(comm.size()));
}

}  // namespace ts
