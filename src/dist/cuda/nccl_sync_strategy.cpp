// `sync` with nccl on device arenas (see nccl_sync_strategy.h).
#include "dist/cuda/nccl_sync_strategy.h"

#include <cmath>

#include "core/error.h"
#include "core/timer.h"
#include "dist/cuda/device_check.h"
#include "dist/cuda/device_exchange.h"

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
  update_ = std::move(update);
  times_ = ExchangeTimes{};
  pipeline_.begin_step();
}

// Queues one bucket's mean on the NCCL stream, after the backward kernels queued so far.
void NcclSyncExchange::reduce_bucket(size_t i) {
  const auto [offset, count] = plan_.buckets[i];
  const cudaStream_t stream = nccl_.stream();
  nccl_after_compute(ready_[i]);
  TS_DIST_CUDA(cudaEventRecord(start_[i], stream));
  if (i + 1 < plan_.buckets.size())
    TS_NCCL(ncclAllReduce(arenas_.grads + offset, arenas_.grads + offset, static_cast<size_t>(count), ncclFloat,
                          ncclAvg, nccl_.comm(), stream));
  else
    reduce_tail(arenas_.grads + offset, count);
  TS_DIST_CUDA(cudaEventRecord(end_[i], stream));
}

// The tail (count floats at grads) with the extras behind it, through the staging buffer:
// tail_ = [grads, loss, non-finite] -> mean over ranks -> grads, and the extras to the host.
void NcclSyncExchange::reduce_tail(float* grads, int64_t count) {
  const cudaStream_t stream = nccl_.stream();
  const size_t bytes = static_cast<size_t>(count) * sizeof(float);
  // Backward is queued whole by now, so reading the loss leaves the device busy. The previous
  // step's verdict wait came after the copy that read these.
  const float loss = local_loss_.value();
  extras_in_[0] = loss;
  extras_in_[1] = std::isfinite(loss) ? 0.0f : 1.0f;
  if (count > 0) TS_DIST_CUDA(cudaMemcpyAsync(tail_, grads, bytes, cudaMemcpyDeviceToDevice, stream));
  TS_DIST_CUDA(cudaMemcpyAsync(tail_ + count, extras_in_, 2 * sizeof(float), cudaMemcpyHostToDevice, stream));
  TS_NCCL(ncclAllReduce(tail_, tail_, static_cast<size_t>(count + 2), ncclFloat, ncclAvg, nccl_.comm(), stream));
  if (count > 0) TS_DIST_CUDA(cudaMemcpyAsync(grads, tail_, bytes, cudaMemcpyDeviceToDevice, stream));
  TS_DIST_CUDA(cudaMemcpyAsync(extras_out_, tail_ + count, 2 * sizeof(float), cudaMemcpyDeviceToHost, stream));
}

double NcclSyncExchange::nccl_seconds() const {
  double seconds = 0;
  for (size_t i = 0; i < plan_.buckets.size(); ++i) {
    float ms = 0;
    TS_DIST_CUDA(cudaEventElapsedTime(&ms, start_[i], end_[i]));
    seconds += static_cast<double>(ms) * 1e-3;
  }
  return seconds;
}

StepVerdict NcclSyncExchange::finish_step(bool /*average_weights: every step exchanges*/) {
  // The rest of backward on the device is compute: waited for before comm_wait starts.
  TS_DIST_CUDA(cudaSetDevice(nccl_.device()));
  TS_DIST_CUDA(cudaEventRecord(compute_done_, compute_));
  TS_DIST_CUDA(cudaEventSynchronize(compute_done_));
  const double t0 = now_seconds();
  pipeline_.complete();  // overlap: every bucket is queued already; else queues them all now
  compute_after_nccl(nccl_done_);  // the update (below) runs after the last bucket
  TS_DIST_CUDA(cudaEventSynchronize(nccl_done_));  // the verdict is on the host
  times_.comm_wait += now_seconds() - t0;
  times_.comm += nccl_seconds();
  StepVerdict v;
  verdict_of_means(v, static_cast<double>(extras_out_[0]), extras_out_[1]);
  if (!v.diverged) timed_update(update_, 0, arenas_.param_count, times_);
  v.times = times_;
  return v;
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
