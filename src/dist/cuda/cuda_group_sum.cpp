// dist.hetero_allreduce device on a GPU rank (dist/device_sum_strategy.h, dist/group_sum.h): its
// host ranks' buckets arrive in pinned host memory, are copied to the GPU and added into the
// gradient arena there; the GPU ranks sum over each other with NCCL; the mean goes back to
// pinned memory for the host ranks. Everything is queued on one stream (NCCL's when there are
// several GPU ranks): the copy of member m + 1 follows the add of member m, so one device
// scratch buffer serves them all. scale_to_outbox waits for the stream, which is also what lets
// the inboxes be refilled and the update run after the sums.
#include <cuda_runtime.h>

#include <algorithm>
#include <vector>

#include "dist/cuda/device_check.h"
#include "dist/cuda/device_exchange.h"
#include "dist/cuda/device_scale.h"
#include "dist/cuda/nccl_comm.h"
#include "dist/device_sum_strategy.h"

namespace ts {
namespace {

class CudaGroupSum : public GroupSum {
 public:
  CudaGroupSum(float* grads, int device, Communicator& summers, size_t members, int64_t capacity)
      : grads_(grads), device_(device), inboxes_(members, nullptr) {
    if (summers.size() > 1) nccl_ = &nccl_of(summers, device);  // collective over the summers
    TS_DIST_CUDA(cudaSetDevice(device_));
    if (nccl_) {
      stream_ = nccl_->stream();
    } else {
      TS_DIST_CUDA(cudaStreamCreateWithFlags(&own_stream_, cudaStreamNonBlocking));
      stream_ = own_stream_;
    }
    const size_t bytes = static_cast<size_t>(std::max<int64_t>(capacity, 1)) * sizeof(float);
    for (float*& inbox : inboxes_) TS_DIST_CUDA(cudaMallocHost(reinterpret_cast<void**>(&inbox), bytes));
    TS_DIST_CUDA(cudaMallocHost(reinterpret_cast<void**>(&outbox_), bytes));
    TS_DIST_CUDA(cudaMalloc(reinterpret_cast<void**>(&scratch_), bytes));
  }

  ~CudaGroupSum() override {
    // No throwing from here; queued work finishes before its memory goes.
    cudaSetDevice(device_);
    cudaStreamSynchronize(stream_);
    for (float* inbox : inboxes_)
      if (inbox) cudaFreeHost(inbox);
    if (outbox_) cudaFreeHost(outbox_);
    if (scratch_) cudaFree(scratch_);
    if (own_stream_) cudaStreamDestroy(own_stream_);
  }
  CudaGroupSum(const CudaGroupSum&) = delete;
  CudaGroupSum& operator=(const CudaGroupSum&) = delete;

  float* inbox(size_t member) override { return inboxes_[member]; }
  float* outbox() override { return outbox_; }

  void add(size_t member, int64_t offset, int64_t count) override {
    if (count <= 0) return;
    TS_DIST_CUDA(cudaSetDevice(device_));  // the communication thread's calls too
    TS_DIST_CUDA(cudaMemcpyAsync(scratch_, inboxes_[member], static_cast<size_t>(count) * sizeof(float),
                                 cudaMemcpyHostToDevice, stream_));
    add_on_device(grads_ + offset, scratch_, count, stream_);
  }

  void sum_over_summers(int64_t offset, int64_t count) override {
    if (!nccl_ || count <= 0) return;
    TS_DIST_CUDA(cudaSetDevice(device_));  // a summer without members calls this first on its thread
    TS_NCCL(ncclAllReduce(grads_ + offset, grads_ + offset, static_cast<size_t>(count), ncclFloat, ncclSum,
                          nccl_->comm(), stream_));
  }

  void scale_to_outbox(int64_t offset, int64_t count, float factor) override {
    TS_DIST_CUDA(cudaSetDevice(device_));
    if (count > 0) {
      scale_on_device(grads_ + offset, count, factor, stream_);
      TS_DIST_CUDA(cudaMemcpyAsync(outbox_, grads_ + offset, static_cast<size_t>(count) * sizeof(float),
                                   cudaMemcpyDeviceToHost, stream_));
    }
    TS_DIST_CUDA(cudaStreamSynchronize(stream_));
  }

 private:
  float* const grads_;  // device: the GPU rank's gradient arena
  const int device_;
  NcclCommunicator* nccl_ = nullptr;
  cudaStream_t own_stream_ = nullptr, stream_ = nullptr;
  std::vector<float*> inboxes_;  // pinned, one per member
  float* outbox_ = nullptr;      // pinned
  float* scratch_ = nullptr;     // device: one member's bucket
};

}  // namespace

std::unique_ptr<GroupSum> make_cuda_group_sum(float* grads, int device, Communicator& summers, size_t members,
                                              int64_t capacity) {
  return std::make_unique<CudaGroupSum>(grads, device, summers, members, capacity);
}

std::unique_ptr<ExchangeStrategy> make_device_sum_exchange(Communicator& comm, const ModelArenas& arenas,
                                                           const ExchangeOptions& options) {
  SumGroups groups = sum_groups_of(comm, !arenas.device.host_accessible);
  const MakeGroupSum make_sum = [&arenas](Communicator& summers, size_t members, int64_t capacity) {
    return make_cuda_group_sum(arenas.grads, arenas.device.cuda_device, summers, members, capacity);
  };
  return std::make_unique<DeviceSumExchange>(comm, arenas, options, std::move(groups), make_sum);
}

}  // namespace ts
