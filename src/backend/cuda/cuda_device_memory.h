// Device memory that one planned CUDA op owns (converted inputs, staged outputs, reduction
// partials): cudaMalloc at plan time, cudaFree with the op. Move-only.
#pragma once

#include <cstddef>
#include <string>

namespace ts::cuda {

class DeviceMemory {
 public:
  DeviceMemory() = default;
  // `bytes` of device memory on the current device (none for 0 bytes). Throws RuntimeError
  // naming `what` when the device is out of memory.
  DeviceMemory(size_t bytes, const std::string& what);
  ~DeviceMemory();
  DeviceMemory(DeviceMemory&& o) noexcept;
  DeviceMemory& operator=(DeviceMemory&& o) noexcept;
  DeviceMemory(const DeviceMemory&) = delete;
  DeviceMemory& operator=(const DeviceMemory&) = delete;

  void* get() const { return data_; }
  float* f32() const { return static_cast<float*>(data_); }
  template <class T>
  T* as() const { return static_cast<T*>(data_); }
  size_t bytes() const { return bytes_; }
  explicit operator bool() const { return data_ != nullptr; }

 private:
  void* data_ = nullptr;
  size_t bytes_ = 0;
};

}  // namespace ts::cuda
