// The nccl point of `bench allreduce` (see dist/allreduce_bench.h), in the manner of
// nccl-tests: an in-place ncclAllReduce (sum) of a device buffer on the NCCL communicator's
// stream; `iters` calls are queued after a barrier, a CUDA event recorded before the first and
// after each, so each call's time is the device's (the events' elapsed times; their sum is the
// loop's, as nccl-tests times it). The check runs one more call on the small-integer data of the
// host algorithms and compares every element with an MPI_Allreduce of the same data on the host.
#include <cuda_runtime.h>
#include <mpi.h>

#include <algorithm>
#include <vector>

#include "dist/cuda/device_check.h"
#include "dist/cuda/device_exchange.h"
#include "dist/cuda/nccl_comm.h"
#include "dist/mpi_comm.h"

namespace ts {
namespace {

// `count` floats of device memory, freed when it goes.
class DeviceFloats {
 public:
  explicit DeviceFloats(int64_t count) {
    TS_DIST_CUDA(cudaMalloc(reinterpret_cast<void**>(&data_), static_cast<size_t>(std::max<int64_t>(count, 1)) * sizeof(float)));
  }
  ~DeviceFloats() { cudaFree(data_); }
  DeviceFloats(const DeviceFloats&) = delete;
  DeviceFloats& operator=(const DeviceFloats&) = delete;
  float* get() const { return data_; }

 private:
  float* data_ = nullptr;
};

// `count` CUDA events (default flags: timing on), destroyed when they go.
class DeviceEvents {
 public:
  explicit DeviceEvents(size_t count) : events_(count, nullptr) {
    for (cudaEvent_t& e : events_) TS_DIST_CUDA(cudaEventCreate(&e));
  }
  ~DeviceEvents() {
    for (cudaEvent_t e : events_)
      if (e) cudaEventDestroy(e);
  }
  DeviceEvents(const DeviceEvents&) = delete;
  DeviceEvents& operator=(const DeviceEvents&) = delete;
  cudaEvent_t operator[](size_t i) const { return events_[i]; }

 private:
  std::vector<cudaEvent_t> events_;
};

void nccl_sum(NcclCommunicator& nccl, float* data, int64_t count) {
  TS_NCCL(ncclAllReduce(data, data, static_cast<size_t>(count), ncclFloat, ncclSum, nccl.comm(), nccl.stream()));
}

// Wrong elements of an nccl sum of the check data, summed over ranks (every rank gets it).
int64_t nccl_wrong_elements(Communicator& comm, NcclCommunicator& nccl, float* device, int64_t count) {
  const size_t bytes = static_cast<size_t>(count) * sizeof(float);
  std::vector<float> expected(static_cast<size_t>(count)), got(static_cast<size_t>(count));
  for (int64_t i = 0; i < count; ++i) expected[static_cast<size_t>(i)] = allreduce_check_value(comm.rank(), i);
  TS_DIST_CUDA(cudaMemcpyAsync(device, expected.data(), bytes, cudaMemcpyHostToDevice, nccl.stream()));
  nccl_sum(nccl, device, count);
  TS_DIST_CUDA(cudaMemcpyAsync(got.data(), device, bytes, cudaMemcpyDeviceToHost, nccl.stream()));
  TS_DIST_CUDA(cudaStreamSynchronize(nccl.stream()));
  comm.allreduce_sum(expected.data(), count);  // MPI_Allreduce of the same data
  int64_t wrong_here = 0, wrong = 0;
  for (size_t i = 0; i < expected.size(); ++i) wrong_here += got[i] != expected[i];
  TS_MPI(MPI_Allreduce(&wrong_here, &wrong, 1, MPI_INT64_T, MPI_SUM, mpi_comm(comm)));
  return wrong;
}

}  // namespace

AllreduceBenchPoint bench_nccl_allreduce(Communicator& comm, const AllreduceBenchCase& c) {
  NcclCommunicator& nccl = nccl_of(comm);
  TS_DIST_CUDA(cudaSetDevice(nccl.device()));
  DeviceFloats data(c.count);
  // Timed calls run on zeros, as the host algorithms do (sums of anything else grow).
  TS_DIST_CUDA(cudaMemsetAsync(data.get(), 0, static_cast<size_t>(c.count) * sizeof(float), nccl.stream()));
  for (int i = 0; i < c.warmup; ++i) nccl_sum(nccl, data.get(), c.count);
  TS_DIST_CUDA(cudaStreamSynchronize(nccl.stream()));
  TS_MPI(MPI_Barrier(mpi_comm(comm)));
  const size_t iters = static_cast<size_t>(c.iters);
  DeviceEvents marks(iters + 1);
  TS_DIST_CUDA(cudaEventRecord(marks[0], nccl.stream()));
  for (size_t i = 0; i < iters; ++i) {
    nccl_sum(nccl, data.get(), c.count);
    TS_DIST_CUDA(cudaEventRecord(marks[i + 1], nccl.stream()));
  }
  TS_DIST_CUDA(cudaStreamSynchronize(nccl.stream()));
  std::vector<double> call_seconds(iters);
  for (size_t i = 0; i < iters; ++i) {
    float ms = 0;
    TS_DIST_CUDA(cudaEventElapsedTime(&ms, marks[i], marks[i + 1]));
    call_seconds[i] = 1e-3 * static_cast<double>(ms);
  }

  AllreduceBenchPoint p;
  reduce_bench_times(comm, call_seconds, p);
  if (c.check) p.wrong = nccl_wrong_elements(comm, nccl, data.get(), c.count);
  return p;
}

}  // namespace ts
