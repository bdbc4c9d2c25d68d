// The link to device arenas (see dist/arena_link.h): each arena has a pinned host mirror of its
// own size; a copy stream of the link's own moves ranges between arena and mirror, ordered
// after the compute stream by the marks (one event per bucket and one for "now"), and the
// compute stream waits for the pushes through one more event. With a CUDA-aware MPI library
// (algorithm mpi) average and broadcast give MPI the device memory, and the mean's 1/N scaling
// runs on the copy stream.
#include <cuda_runtime.h>

#include <vector>

#include "core/error.h"
#include "dist/cuda/device_check.h"
#include "dist/cuda/device_exchange.h"
#include "dist/cuda/device_scale.h"

namespace ts {
namespace {

class CudaArenaLink final : public ArenaLink {
 public:
  CudaArenaLink(const ModelArenas& arenas, bool cuda_aware, size_t marks);
  ~CudaArenaLink() override;
  CudaArenaLink(const CudaArenaLink&) = delete;
  CudaArenaLink& operator=(const CudaArenaLink&) = delete;

  ArenaTransport transport() const override {
    return cuda_aware_ ? ArenaTransport::cuda_aware_mpi : ArenaTransport::staged;
  }
  float* host(Arena a) override { return mirror(a).host; }
  void mark(size_t slot) override;
  size_t now_mark() override {
    mark(now_slot());
    return now_slot();
  }
  void wait(size_t slot) override;
  void pull(Arena a, int64_t offset, int64_t count, size_t slot) override;
  void push(Arena a, int64_t offset, int64_t count) override;
  void order_compute_after_pushes() override;
  void average(Communicator& comm, AllreduceAlgorithm algorithm, Arena a, int64_t offset, int64_t count, size_t slot,
               PsTimings* ps) override;
  void broadcast(Communicator& comm, Arena a, int64_t offset, int64_t count, int root, size_t slot) override;

 private:
  // An arena on the device and its pinned host mirror ((count) floats each).
  struct Mirror {
    float* device = nullptr;
    float* host = nullptr;
    int64_t count = 0;
  };
  Mirror& mirror(Arena a) { return mirrors_[static_cast<size_t>(a)]; }
  size_t now_slot() const { return marks_.size() - 1; }
  void check_range(Arena a, int64_t offset, int64_t count);

  const int device_;
  const cudaStream_t compute_;
  const bool cuda_aware_;
  cudaStream_t copy_ = nullptr;
  std::vector<cudaEvent_t> marks_;  // marks 0 .. n-1, then "now"
  cudaEvent_t pushed_ = nullptr;    // the copy stream after the latest push
  Mirror mirrors_[3];               // params, grads, state (Arena order)
};

CudaArenaLink::CudaArenaLink(const ModelArenas& arenas, bool cuda_aware, size_t marks)
    : device_(arenas.device.cuda_device),
      compute_(static_cast<cudaStream_t>(arenas.device.compute_stream)),
      cuda_aware_(cuda_aware),
      marks_(marks + 1, nullptr) {
  TS_CHECK(device_ >= 0, "exchange strategy: device arenas without a CUDA device (ArenaDevice::cuda_device " +
                             std::to_string(device_) + ")");
  mirrors_[0] = {arenas.params, nullptr, arenas.param_count};
  mirrors_[1] = {arenas.grads, nullptr, arenas.param_count};
  mirrors_[2] = {arenas.state, nullptr, arenas.state_count};
  TS_DIST_CUDA(cudaSetDevice(device_));
  TS_DIST_CUDA(cudaStreamCreateWithFlags(&copy_, cudaStreamNonBlocking));
  for (cudaEvent_t& e : marks_) TS_DIST_CUDA(cudaEventCreateWithFlags(&e, cudaEventDisableTiming));
  TS_DIST_CUDA(cudaEventCreateWithFlags(&pushed_, cudaEventDisableTiming));
  for (Mirror& m : mirrors_)
    if (m.count > 0) TS_DIST_CUDA(cudaMallocHost(reinterpret_cast<void**>(&m.host), static_cast<size_t>(m.count) * sizeof(float)));
}

CudaArenaLink::~CudaArenaLink() {
  // No throwing from here; pending copies finish before the memory goes.
  cudaSetDevice(device_);
  if (copy_) cudaStreamSynchronize(copy_);
  for (Mirror& m : mirrors_)
    if (m.host) cudaFreeHost(m.host);
  for (cudaEvent_t e : marks_)
    if (e) cudaEventDestroy(e);
  if (pushed_) cudaEventDestroy(pushed_);
  if (copy_) cudaStreamDestroy(copy_);
}

void CudaArenaLink::check_range(Arena a, int64_t offset, int64_t count) {
  const Mirror& m = mirror(a);
  TS_CHECK(offset >= 0 && count >= 0 && offset + count <= m.count,
           "exchange strategy: range [" + std::to_string(offset) + ", " + std::to_string(offset + count) +
               ") outside an arena of " + std::to_string(m.count) + " floats");
}

void CudaArenaLink::mark(size_t slot) {
  TS_DIST_CUDA(cudaSetDevice(device_));
  TS_DIST_CUDA(cudaEventRecord(marks_.at(slot), compute_));
}

void CudaArenaLink::wait(size_t slot) {
  TS_DIST_CUDA(cudaSetDevice(device_));  // this thread's device (the communication thread's too)
  TS_DIST_CUDA(cudaEventSynchronize(marks_.at(slot)));
}

void CudaArenaLink::pull(Arena a, int64_t offset, int64_t count, size_t slot) {
  if (count == 0) return;
  check_range(a, offset, count);
  Mirror& m = mirror(a);
  TS_DIST_CUDA(cudaSetDevice(device_));  // this thread's device (the communication thread's too)
  TS_DIST_CUDA(cudaStreamWaitEvent(copy_, marks_.at(slot), 0));
  TS_DIST_CUDA(cudaMemcpyAsync(m.host + offset, m.device + offset, static_cast<size_t>(count) * sizeof(float),
                               cudaMemcpyDeviceToHost, copy_));
  TS_DIST_CUDA(cudaStreamSynchronize(copy_));
}

void CudaArenaLink::push(Arena a, int64_t offset, int64_t count) {
  if (count == 0) return;
  check_range(a, offset, count);
  Mirror& m = mirror(a);
  TS_DIST_CUDA(cudaSetDevice(device_));
  // The mirror range stays untouched until the copy is done: the next pull of it synchronises
  // the copy stream first, and only then does the host write it again.
  TS_DIST_CUDA(cudaMemcpyAsync(m.device + offset, m.host + offset, static_cast<size_t>(count) * sizeof(float),
                               cudaMemcpyHostToDevice, copy_));
}

void CudaArenaLink::order_compute_after_pushes() {
  TS_DIST_CUDA(cudaSetDevice(device_));
  TS_DIST_CUDA(cudaEventRecord(pushed_, copy_));
  TS_DIST_CUDA(cudaStreamWaitEvent(compute_, pushed_, 0));
}

void CudaArenaLink::average(Communicator& comm, AllreduceAlgorithm algorithm, Arena a, int64_t offset, int64_t count,
                            size_t slot, PsTimings* ps) {
  if (!cuda_aware_ || algorithm != AllreduceAlgorithm::mpi) return ArenaLink::average(comm, algorithm, a, offset, count, slot, ps);
  if (count == 0) return;
  check_range(a, offset, count);
  float* data = mirror(a).device + offset;
  wait(slot);
  TS_DIST_CUDA(cudaSetDevice(device_));
  TS_DIST_CUDA(cudaStreamSynchronize(copy_));  // earlier copies into this range (a pushed tail) have landed
  allreduce_sum(comm, AllreduceAlgorithm::mpi, data, count);  // MPI_Allreduce on device memory
  if (comm.size() > 1) scale_on_device(data, count, 1.0f / static_cast<float>(comm.size()), copy_);
}

void CudaArenaLink::broadcast(Communicator& comm, Arena a, int64_t offset, int64_t count, int root, size_t slot) {
  if (!cuda_aware_) return ArenaLink::broadcast(comm, a, offset, count, root, slot);
  if (count == 0) return;
  check_range(a, offset, count);
  wait(slot);
  TS_DIST_CUDA(cudaSetDevice(device_));
  TS_DIST_CUDA(cudaStreamSynchronize(copy_));
  comm.broadcast(mirror(a).device + offset, count, root);  // MPI_Bcast on device memory
}

}  // namespace

std::unique_ptr<ArenaLink> make_cuda_arena_link(const ModelArenas& arenas, bool cuda_aware_mpi, size_t marks) {
  return std::make_unique<CudaArenaLink>(arenas, cuda_aware_mpi, marks);
}

}  // namespace ts
