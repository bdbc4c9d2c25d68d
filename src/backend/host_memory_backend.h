// The memory half of the backends that compute in host memory (ref, cpu): allocations are
// 64-byte aligned and zeroed, copies are memcpy, and the queue is synchronous.
#pragma once

#include <cstdlib>
#include <cstring>
#include <string>

#include "backend/backend.h"
#include "core/error.h"

namespace ts {

class HostMemoryBackend : public Backend {
 public:
  DeviceBuffer allocate(size_t bytes) override { return DeviceBuffer(this, zeroed(bytes), bytes, false); }
  DeviceBuffer allocate_host(size_t bytes) override { return DeviceBuffer(this, zeroed(bytes), bytes, true); }
  void copy_from_host(void* device_dst, const void* host_src, size_t bytes) override {
    if (bytes) std::memcpy(device_dst, host_src, bytes);
  }
  void copy_to_host(void* host_dst, const void* device_src, size_t bytes) override {
    if (bytes) std::memcpy(host_dst, device_src, bytes);
  }
  void copy(void* device_dst, const void* device_src, size_t bytes) override {
    if (bytes && device_dst != device_src) std::memmove(device_dst, device_src, bytes);
  }
  void fill_zero(void* device_dst, size_t bytes) override {
    if (bytes) std::memset(device_dst, 0, bytes);
  }
  void synchronize() override {}

 protected:
  void release(void* data, size_t, bool) override { std::free(data); }

 private:
  void* zeroed(size_t bytes) const {
    const size_t rounded = (bytes + 63) / 64 * 64;
    if (rounded == 0) return nullptr;
    void* p = std::aligned_alloc(64, rounded);
    if (!p) throw RuntimeError("backend " + name() + ": out of memory allocating " + std::to_string(bytes) + " bytes");
    std::memset(p, 0, rounded);
    return p;
  }
};

}  // namespace ts
