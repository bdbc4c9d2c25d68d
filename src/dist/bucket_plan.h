// dist-internal, shared by the exchange strategies: how the flat arena is cut into buckets,
// and the staged last bucket that carries the step's loss.
//
// Buckets tile the arena from the top: bucket i = [P - (i+1) B, P - i B), down to the tail
// T = min(B, 64 KiB of floats, P), so they become final in order while backward walks the
// layers from the last to the first. The tail [0, T) is the last bucket: it is reduced through
// a staging buffer that carries two extra floats, [loss, non-finite count]; summed over ranks
// they give the mean loss and the divergence verdict without a message of their own. Keeping
// the tail small keeps its two copies cheap (a whole 25 MiB bucket would cost milliseconds).
#pragma once

#include <cmath>
#include <cstdint>
#include <vector>

#include "dist/exchange_strategy.h"
#include "dist/reduce_kernel.h"

namespace ts {

struct BucketPlan {
  std::vector<Bucket> buckets;  // reduction order: highest offsets first, the tail [0, T) last
  int64_t tail() const { return buckets.back().second; }
  int64_t largest() const;  // floats of the largest bucket (0 for an empty arena)
  // At least one bucket (the tail, possibly empty when param_count is 0).
  static BucketPlan tile(int64_t param_count, int64_t bucket_elements);
};

// A staging buffer: `payload` floats (the tail bucket, and for weight_avg the state after it)
// followed by the two verdict extras [loss, non-finite count].
class VerdictStaging {
 public:
  explicit VerdictStaging(int64_t payload) : data_(static_cast<size_t>(payload + kExtras), 0.0f) {}
  float* data() { return data_.data(); }
  int64_t size() const { return static_cast<int64_t>(data_.size()); }
  // The extras of this rank before the sum.
  void set_extras(float loss, float nonfinite);
  // The extras of a rank whose only news is this step's loss (non-finite: counted once).
  void set_loss(float loss) { set_extras(loss, std::isfinite(loss) ? 0.0f : 1.0f); }
  // After the sum over `world` ranks: the mean loss and the verdict, exchanged.
  void read_verdict(StepVerdict& verdict, int world) const;

 private:
  static constexpr int64_t kExtras = 2;
  std::vector<float> data_;
};

// The verdict from the extras once they are means over ranks (NCCL averages them with the
// tail): the mean loss, and diverged when some rank counted a non-finite loss.
void verdict_of_means(StepVerdict& verdict, double mean_loss, float mean_nonfinite);

// Helpers of every strategy (scale, add_into: dist/reduce_kernel.h).
// Copies `count` floats (count may be 0).
void copy_floats(float* dst, const float* src, int64_t count);
// The step's update over [offset, offset + count), its time added to times.optimizer.
void timed_update(const RangeUpdate& update, int64_t offset, int64_t count, ExchangeTimes& times);
// In-place mean over ranks (sum with `algorithm`, then 1/world).
void average_over_ranks(Communicator& comm, AllreduceAlgorithm algorithm, float* data, int64_t count,
                        PsTimings* ps = nullptr);

}  // namespace ts
