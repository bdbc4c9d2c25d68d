// Device memory an op owns (see cuda_device_memory.h).
#include "backend/cuda/cuda_device_memory.h"

#include <utility>

#include <cuda_runtime.h>

#include "core/error.h"

namespace ts::cuda {

DeviceMemory::DeviceMemory(size_t bytes, const std::string& what) : bytes_(bytes) {
  if (bytes == 0) return;
  const cudaError_t e = cudaMalloc(&data_, bytes);
  if (e != cudaSuccess) {
    cudaGetLastError();  // clears the (non-sticky) allocation error
    data_ = nullptr;
    throw RuntimeError("cuda backend: cannot allocate " + std::to_string(bytes) + " bytes of device memory for " +
                       what + ": " + cudaGetErrorString(e) + "; use a smaller batch");
  }
}

DeviceMemory::~DeviceMemory() {
  if (data_) cudaFree(data_);  // a destructor must not throw; cudaFree waits for the device
}

DeviceMemory::DeviceMemory(DeviceMemory&& o) noexcept
    : data_(std::exchange(o.data_, nullptr)), bytes_(std::exchange(o.bytes_, 0)) {}

DeviceMemory& DeviceMemory::operator=(DeviceMemory&& o) noexcept {
  if (this != &o) {
    if (data_) cudaFree(data_);
    data_ = std::exchange(o.data_, nullptr);
    bytes_ = std::exchange(o.bytes_, 0);
  }
  return *this;
}

}  // namespace ts::cuda
