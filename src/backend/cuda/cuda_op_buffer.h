// Device memory that one planned op owns (converted inputs, staged outputs, reduction partials):
// allocated at plan time, freed with the op. Move-only.
#pragma once

#include <cstddef>
#include <utility>

#include <cuda_runtime.h>

#include "backend/cuda/cuda_check.h"

namespace ts::cuda {

class OpBuffer {
 public:
  OpBuffer() = default;
  // `bytes` of device memory on the current device (none for 0 bytes).
  explicit OpBuffer(size_t bytes) : bytes_(bytes) {
    if (bytes > 0) TS_CUDA_CHECK(cudaMalloc(&data_, bytes));
  }
  ~OpBuffer() {
    if (data_) cudaFree(data_);  // a destructor cannot report; a failed free leaks at worst
  }
  OpBuffer(OpBuffer&& o) noexcept : data_(std::exchange(o.data_, nullptr)), bytes_(std::exchange(o.bytes_, 0)) {}
  OpBuffer& operator=(OpBuffer&& o) noexcept {
    std::swap(data_, o.data_);
    std::swap(bytes_, o.bytes_);
    return *this;
  }
  OpBuffer(const OpBuffer&) = delete;
  OpBuffer& operator=(const OpBuffer&) = delete;

  void* get() const { return data_; }
  template <class T>
  T* as() const { return static_cast<T*>(data_); }
  size_t bytes() const { return bytes_; }
  explicit operator bool() const { return data_ != nullptr; }

 private:
  void* data_ = nullptr;
  size_t bytes_ = 0;
};

}  // namespace ts::cuda
