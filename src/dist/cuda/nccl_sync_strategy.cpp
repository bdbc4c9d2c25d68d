// `sync` with nccl on device arenas (see nccl_sync_strategy.h).
#include "dist/cuda/nccl_sync_strategy.h"

#include <algorithm>
#include <cmath>
#include <limits>
#include <string>

#include "core/error.h"
#include "core/timer.h"
#include "dist/cuda/device_check.h"
#include "dist/cuda/device_exchange.h"
#include "dist/cuda/device_scale.h"

namespace ts {

NcclSyncExchange::NcclSyncExchange(Communicator& comm, ModelArenas arenas, const ExchangeOptions& options)
    : comm_(comm),
      arenas_(arenas),
      plan_(BucketPlan::tile(arenas.param_count, options.bucket_elements)),
      nccl_(nccl_of(comm)),
      compute_(static_cast<cudaStream_t>(arenas.device.compute_stream)),
      ready_(plan_.buckets.size(), nullptr),
      start_(plan_.buckets.size(), nullptr),
      end_(plan_.buckets.size(), nullptr),
      pipeline_(plan_, arenas.param_count, options.overlap ? PipelineMode::eager : PipelineMode::deferred,
                [this](size_t i) { reduce_bucket(i); }) {
  if (arenas.device.cuda_device != nccl_.device())
    throw RuntimeError("dist.allreduce nccl: the model's arenas are on CUDA device " +
                       std::to_string(arenas.device.cuda_device) + " but NCCL runs this rank on device " +
                       std::to_string(nccl_.device()) + " (local rank " + std::to_string(comm.local_rank()) +
                       " modulo the visible devices); create the backend with make_backend(name, comm.local_rank())");
  TS_DIST_CUDA(cudaSetDevice(nccl_.device()));
  for (size_t i = 0; i < plan_.buckets.size(); ++i) {
    TS_DIST_CUDA(cudaEventCreateWithFlags(&ready_[i], cudaEventDisableTiming));
    TS_DIST_CUDA(cudaEventCreate(&start_[i]));
    TS_DIST_CUDA(cudaEventCreate(&end_[i]));
  }
  TS_DIST_CUDA(cudaEventCreateWithFlags(&compute_done_, cudaEventDisableTiming));
  TS_DIST_CUDA(cudaEventCreateWithFlags(&nccl_done_, cudaEventDisableTiming));
  TS_DIST_CUDA(cudaMalloc(reinterpret_cast<void**>(&tail_), static_cast<size_t>(plan_.tail() + 2) * sizeof(float)));
  TS_DIST_CUDA(cudaMallocHost(reinterpret_cast<void**>(&extras_in_), 2 * sizeof(float)));
  TS_DIST_CUDA(cudaMallocHost(reinterpret_cast<void**>(&extras_out_), 2 * sizeof(float)));
}

NcclSyncExchange::~NcclSyncExchange() {
  // No throwing from here; queued work finishes before its memory goes.
  cudaSetDevice(nccl_.device());
  cudaStreamSynchronize(nccl_.stream());
  for (auto* events : {&ready_, &start_, &end_})
    for (cudaEvent_t e : *events)
      if (e) cudaEventDestroy(e);
  if (compute_done_) cudaEventDestroy(compute_done_);
  if (nccl_done_) cudaEventDestroy(nccl_done_);
  if (tail_) cudaFree(tail_);
  if (extras_in_) cudaFreeHost(extras_in_);
  if (extras_out_) cudaFreeHost(extras_out_);
  for (cudaEvent_t e : combined_ready_)
    if (e) cudaEventDestroy(e);
  if (means_) cudaFreeHost(means_);
}

void NcclSyncExchange::nccl_after_compute(cudaEvent_t event) {
  TS_DIST_CUDA(cudaSetDevice(nccl_.device()));
  TS_DIST_CUDA(cudaEventRecord(event, compute_));
  TS_DIST_CUDA(cudaStreamWaitEvent(nccl_.stream(), event, 0));
}

void NcclSyncExchange::compute_after_nccl(cudaEvent_t event) {
  TS_DIST_CUDA(cudaEventRecord(event, nccl_.stream()));
  TS_DIST_CUDA(cudaStreamWaitEvent(compute_, event, 0));
}

// Rank 0's parameters and state to every rank, after the compute stream's initialisation.
void NcclSyncExchange::broadcast_model() {
  nccl_after_compute(compute_done_);
  TS_NCCL(ncclGroupStart());
  if (arenas_.param_count > 0)
    TS_NCCL(ncclBroadcast(arenas_.params, arenas_.params, static_cast<size_t>(arenas_.param_count), ncclFloat, 0,
                          nccl_.comm(), nccl_.stream()));
  if (arenas_.state_count > 0)
    TS_NCCL(ncclBroadcast(arenas_.state, arenas_.state, static_cast<size_t>(arenas_.state_count), ncclFloat, 0,
                          nccl_.comm(), nccl_.stream()));
  TS_NCCL(ncclGroupEnd());
  compute_after_nccl(nccl_done_);
}

void NcclSyncExchange::begin_step(LocalLoss local_loss, RangeUpdate update) {
  local_loss_ = std::move(local_loss);
  if (local_loss_.on_device()) defer_verdicts();
  TS_CHECK(local_loss_.on_device() == deferred_,
           "NcclSyncExchange: every step of a run hands its loss over on the device (loss_reads log) or none does");
  ++steps_begun_;
  slot_ = deferred_ ? static_cast<size_t>(issued_ % kCombinedSteps) : 0;
  update_ = std::move(update);
  times_ = ExchangeTimes{};
  pipeline_.begin_step();
}

// Queues one bucket's mean on the NCCL stream, after the backward kernels queued so far.
void NcclSyncExchange::reduce_bucket(size_t i) {
  const auto [offset, count] = plan_.buckets[i];
  const cudaStream_t stream = nccl_.stream();
  nccl_after_compute(ready_[i]);
  TS_DIST_CUDA(cudaEventRecord(start_of(i), stream));
  if (i + 1 < plan_.buckets.size())
    TS_NCCL(ncclAllReduce(arenas_.grads + offset, arenas_.grads + offset, static_cast<size_t>(count), ncclFloat,
                          ncclAvg, nccl_.comm(), stream));
  else
    reduce_tail(arenas_.grads + offset, count);
  TS_DIST_CUDA(cudaEventRecord(end_of(i), stream));
}

// The tail (count floats at grads) with the loss behind it, through the staging buffer:
// tail_ = [grads, loss...] -> mean over ranks -> grads, and the loss's means to pinned memory
// (extras_out_, or the step's slot of means_ when the verdict is deferred).
void NcclSyncExchange::reduce_tail(float* grads, int64_t count) {
  const cudaStream_t stream = nccl_.stream();
  const size_t bytes = static_cast<size_t>(count) * sizeof(float);
  if (count > 0) TS_DIST_CUDA(cudaMemcpyAsync(tail_, grads, bytes, cudaMemcpyDeviceToDevice, stream));
  const int64_t extras = stage_loss(count);
  TS_NCCL(ncclAllReduce(tail_, tail_, static_cast<size_t>(count + extras), ncclFloat, ncclAvg, nccl_.comm(), stream));
  if (count > 0) TS_DIST_CUDA(cudaMemcpyAsync(grads, tail_, bytes, cudaMemcpyDeviceToDevice, stream));
  float* means = deferred_ ? means_ + slot_ : extras_out_;
  TS_DIST_CUDA(cudaMemcpyAsync(means, tail_ + count, static_cast<size_t>(extras) * sizeof(float),
                               cudaMemcpyDeviceToHost, stream));
}

int64_t NcclSyncExchange::stage_loss(int64_t count) {
  const cudaStream_t stream = nccl_.stream();
  if (local_loss_.on_device()) {
    // The loss stays where forward wrote it until the next forward, which the compute stream
    // queues behind this step's update, itself behind the last bucket.
    TS_DIST_CUDA(cudaMemcpyAsync(tail_ + count, local_loss_.device_loss(), sizeof(float), cudaMemcpyDeviceToDevice,
                                 stream));
    if (local_loss_.weight() != 1.0f) scale_on_device(tail_ + count, 1, local_loss_.weight(), stream);
    return 1;
  }
  // Backward is queued whole by now, so reading the loss leaves the device busy. The previous
  // step's verdict wait came after the copy that read these.
  const float loss = local_loss_.value();
  extras_in_[0] = loss;
  extras_in_[1] = std::isfinite(loss) ? 0.0f : 1.0f;
  TS_DIST_CUDA(cudaMemcpyAsync(tail_ + count, extras_in_, 2 * sizeof(float), cudaMemcpyHostToDevice, stream));
  return 2;
}

double NcclSyncExchange::nccl_seconds(size_t slot) const {
  double seconds = 0;
  const size_t n = plan_.buckets.size();
  for (size_t i = 0; i < n; ++i) {
    float ms = 0;
    TS_DIST_CUDA(cudaEventElapsedTime(&ms, start_[slot * n + i], end_[slot * n + i]));
    seconds += static_cast<double>(ms) * 1e-3;
  }
  return seconds;
}

StepVerdict NcclSyncExchange::finish_step(bool /*average_weights: every step exchanges*/) {
  if (deferred_) return finish_deferred_step();
  // The rest of backward on the device is compute: waited for before comm_wait starts.
  TS_DIST_CUDA(cudaSetDevice(nccl_.device()));
  TS_DIST_CUDA(cudaEventRecord(compute_done_, compute_));
  TS_DIST_CUDA(cudaEventSynchronize(compute_done_));
  const double t0 = now_seconds();
  pipeline_.complete();  // overlap: every bucket is queued already; else queues them all now
  compute_after_nccl(nccl_done_);  // the update (below) runs after the last bucket
  TS_DIST_CUDA(cudaEventSynchronize(nccl_done_));  // the verdict is on the host
  times_.comm_wait += now_seconds() - t0;
  times_.comm += nccl_seconds(slot_);
  StepVerdict v;
  verdict_of_means(v, static_cast<double>(extras_out_[0]), extras_out_[1]);
  if (!v.diverged) timed_update(update_, 0, arenas_.param_count, times_);
  v.times = times_;
  return v;
}

// The ring of kCombinedSteps slots: bucket events and a pinned mean loss per step.
void NcclSyncExchange::defer_verdicts() {
  if (deferred_) return;
  TS_CHECK(steps_begun_ == 0, "NcclSyncExchange: every step of a run hands its loss over on the device "
                              "(loss_reads log) or none does");
  TS_DIST_CUDA(cudaSetDevice(nccl_.device()));
  const size_t events = static_cast<size_t>(kCombinedSteps) * plan_.buckets.size();
  for (auto* timed : {&start_, &end_}) {
    const size_t had = timed->size();
    timed->resize(events, nullptr);
    for (size_t i = had; i < events; ++i) TS_DIST_CUDA(cudaEventCreate(&(*timed)[i]));
  }
  combined_ready_.assign(static_cast<size_t>(kCombinedSteps), nullptr);
  for (cudaEvent_t& e : combined_ready_) TS_DIST_CUDA(cudaEventCreateWithFlags(&e, cudaEventDisableTiming));
  TS_DIST_CUDA(cudaMallocHost(reinterpret_cast<void**>(&means_), static_cast<size_t>(kCombinedSteps) * sizeof(float)));
  deferred_ = true;
}

// The update behind the last bucket, with no host wait: what the step learnt is read later
// (combined).
StepVerdict NcclSyncExchange::finish_deferred_step() {
  TS_DIST_CUDA(cudaSetDevice(nccl_.device()));
  pipeline_.complete();  // overlap: every bucket is queued already; else queues them all now
  TS_DIST_CUDA(cudaEventRecord(combined_ready_[slot_], nccl_.stream()));
  compute_after_nccl(nccl_done_);
  timed_update(update_, 0, arenas_.param_count, times_);
  StepVerdict v;
  v.exchanged = true;
  v.loss = std::numeric_limits<double>::quiet_NaN();
  v.combined_id = ++issued_;
  v.times = times_;
  return v;
}

CombinedStep NcclSyncExchange::combined(int64_t id) {
  TS_CHECK(deferred_ && id > 0 && id <= issued_ && id > issued_ - kCombinedSteps,
           "NcclSyncExchange::combined(" + std::to_string(id) + "): the ring holds steps " +
               std::to_string(std::max<int64_t>(1, issued_ - kCombinedSteps + 1)) + " to " + std::to_string(issued_));
  const size_t slot = static_cast<size_t>((id - 1) % kCombinedSteps);
  TS_DIST_CUDA(cudaSetDevice(nccl_.device()));
  TS_DIST_CUDA(cudaEventSynchronize(combined_ready_[slot]));
  return {static_cast<double>(means_[slot]), nccl_seconds(slot)};
}

void NcclSyncExchange::average_state() {
  if (arenas_.state_count == 0) return;
  nccl_after_compute(compute_done_);
  TS_NCCL(ncclAllReduce(arenas_.state, arenas_.state, static_cast<size_t>(arenas_.state_count), ncclFloat, ncclAvg,
                        nccl_.comm(), nccl_.stream()));
  compute_after_nccl(nccl_done_);
}

std::unique_ptr<ExchangeStrategy> make_nccl_sync_exchange(Communicator& comm, const ModelArenas& arenas,
                                                          const ExchangeOptions& options) {
  return std::make_unique<NcclSyncExchange>(comm, arenas, options);
}

}  // namespace ts
