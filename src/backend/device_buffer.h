// An owning allocation of one backend's memory (device memory, or host memory the device
// copies from fast): Backend::allocate / allocate_host return it and it gives the memory back
// to that backend when it goes away. Move-only; the backend must outlive it.
#pragma once

#include <cstddef>
#include <utility>

namespace ts {

class Backend;

class DeviceBuffer {
 public:
  DeviceBuffer() = default;
  DeviceBuffer(Backend* owner, void* data, size_t bytes, bool host)
      : owner_(owner), data_(data), bytes_(bytes), host_(host) {}
  ~DeviceBuffer() { reset(); }
  DeviceBuffer(const DeviceBuffer&) = delete;
  DeviceBuffer& operator=(const DeviceBuffer&) = delete;
  DeviceBuffer(DeviceBuffer&& o) noexcept { *this = std::move(o); }
  DeviceBuffer& operator=(DeviceBuffer&& o) noexcept {
    if (this != &o) {
      reset();
      owner_ = std::exchange(o.owner_, nullptr);
      data_ = std::exchange(o.data_, nullptr);
      bytes_ = std::exchange(o.bytes_, 0);
      host_ = o.host_;
    }
    return *this;
  }

  void* data() const { return data_; }
  float* f32() const { return static_cast<float*>(data_); }
  size_t bytes() const { return bytes_; }
  bool host() const { return host_; }  // allocate_host memory (the host may touch it)
  explicit operator bool() const { return data_ != nullptr; }
  void reset();  // gives the memory back now (backend.cpp)

 private:
  Backend* owner_ = nullptr;
  void* data_ = nullptr;
  size_t bytes_ = 0;
  bool host_ = false;
};

}  // namespace ts
