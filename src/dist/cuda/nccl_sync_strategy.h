// dist-internal (CUDA builds): `sync` gradient averaging with dist.allreduce nccl, on device
// arenas (docs/strategies.md "GPUs: NCCL and device arenas"). Each gradient bucket is queued
// on the NCCL communicator's stream as soon as backward has produced it (overlap) or all after
// backward:
//   compute stream  ... backward kernels --record ready[i]
//   NCCL stream          wait ready[i] -- start[i] -- ncclAllReduce(ncclAvg) -- end[i]
// The tail bucket [0, T) goes through a device staging buffer of T + 2 floats whose extras
// [loss, non-finite] come from pinned host memory, and the averaged extras go back to pinned
// host memory, so the verdict costs no message of its own (dist/bucket_plan.h). finish_step
// waits on the host only for that verdict (an event after the last bucket), makes the compute
// stream wait on the same event, and queues the update there. No thread: NCCL calls only queue.
// Times: comm = the NCCL stream's time per bucket (start[i] -> end[i], events read after the
// verdict's wait); comm_wait = the host's wait for the verdict once backward is done on the
// device.
// Deferred verdicts (loss_reads: log, the loss handed over on the device): the tail carries the
// loss copied device-to-device [grads, loss * weight] and its mean goes to a pinned slot of a
// ring of kCombinedSteps; finish_step queues the update behind the last bucket and returns
// without waiting (comm_wait 0). The step's bucket events live in the same slot of the ring, and
// combined(id) waits for that step's exchange and reads its mean loss and NCCL time. A
// non-finite loss on any rank makes the mean non-finite on every rank; the update runs (loss
// scaling on the device skips an overflowing one), as on one rank (train/loss_ledger.h).
#pragma once

#include <cuda_runtime.h>

#include <vector>

#include "dist/bucket_pipeline.h"
#include "dist/bucket_plan.h"
#include "dist/cuda/nccl_comm.h"
#include "dist/device_loss_combiner.h"
#include "dist/exchange_strategy.h"

namespace ts {

class NcclSyncExchange : public ExchangeStrategy, public DeviceLossCombiner {
 public:
  NcclSyncExchange(Communicator& comm, ModelArenas arenas, const ExchangeOptions& options);
  ~NcclSyncExchange() override;
  NcclSyncExchange(const NcclSyncExchange&) = delete;
  NcclSyncExchange& operator=(const NcclSyncExchange&) = delete;

  const char* name() const override { return "sync"; }
  ArenaTransport transport() const override { return ArenaTransport::nccl; }
  bool times_ps_phases() const override { return false; }
  void broadcast_model() override;
  void begin_step(LocalLoss local_loss, RangeUpdate update) override;
  void gradients_ready(int64_t offset, int64_t count) override { pipeline_.gradients_ready(offset, count); }
  StepVerdict finish_step(bool average_weights) override;
  void average_state() override;
  const std::vector<Bucket>& buckets() const override { return plan_.buckets; }
  int64_t combined_capacity() const override { return kCombinedSteps; }
  CombinedStep combined(int64_t id) override;

  static constexpr int64_t kCombinedSteps = 64;

 private:
  void reduce_bucket(size_t index);  // queues bucket `index` (caller's thread)
  void reduce_tail(float* grads, int64_t count);
  // Queues this step's loss behind the tail's gradients at tail_ + count; returns the floats
  // written (host loss: [loss, non-finite]; device loss: [loss * weight]).
  int64_t stage_loss(int64_t count);
  void defer_verdicts();  // on the first step with a loss on the device: the ring of slots
  StepVerdict finish_deferred_step();
  cudaEvent_t& start_of(size_t bucket) { return start_[slot_ * plan_.buckets.size() + bucket]; }
  cudaEvent_t& end_of(size_t bucket) { return end_[slot_ * plan_.buckets.size() + bucket]; }
  // The NCCL stream waits for the compute stream's work so far, via `event`.
  void nccl_after_compute(cudaEvent_t event);
  // The compute stream waits for the NCCL stream's work so far, via `event`.
  void compute_after_nccl(cudaEvent_t event);
  double nccl_seconds(size_t slot) const;  // sum over a step's buckets, after they are done

  Communicator& comm_;
  const ModelArenas arenas_;
  const BucketPlan plan_;
  NcclCommunicator& nccl_;
  const cudaStream_t compute_;
  std::vector<cudaEvent_t> ready_;        // per bucket
  std::vector<cudaEvent_t> start_, end_;  // per bucket, per slot (one slot until deferred)
  cudaEvent_t compute_done_ = nullptr;  // backward queued so far (finish_step)
  cudaEvent_t nccl_done_ = nullptr;     // the NCCL stream after the last bucket / collective
  float* tail_ = nullptr;               // device: (tail + 2) floats
  float* extras_in_ = nullptr;          // pinned: [loss, non-finite] of this rank
  float* extras_out_ = nullptr;         // pinned: their means over ranks
  // Deferred verdicts: the ring (kCombinedSteps) of mean losses and their events.
  bool deferred_ = false;
  int64_t steps_begun_ = 0, issued_ = 0;  // issued_: combined ids given out
  size_t slot_ = 0;                        // this step's slot
  float* means_ = nullptr;                 // pinned
  std::vector<cudaEvent_t> combined_ready_;
  BucketPipeline pipeline_;
  LocalLoss local_loss_{0.0f};
  RangeUpdate update_;
  ExchangeTimes times_;
};

}  // namespace ts
