// Data types at the edges of a planned CUDA op (cuda_context.h conventions). An op computes in
// one data type (act_dtype() when it was planned); a tensor of another type passes through a
// port: an input is converted into a buffer the op owns, an output is computed into such a
// buffer and converted into the caller's memory. Where the types agree a port is a no-op and
// owns nothing. Conversions only enqueue on the stream (ts::cuda::convert).
#pragma once

#include <cstddef>
#include <cstdint>
#include <string>

#include <cuda_runtime.h>

#include "backend/tensor.h"

namespace ts::cuda {

// Device memory an op owns (cudaMalloc at plan time, cudaFree with the op). Move-only.
class DeviceMemory {
 public:
  DeviceMemory() = default;
  // Throws RuntimeError naming `what` when the device is out of memory.
  DeviceMemory(size_t bytes, const std::string& what);
  ~DeviceMemory();
  DeviceMemory(DeviceMemory&& o) noexcept;
  DeviceMemory& operator=(DeviceMemory&& o) noexcept;
  void* get() const { return data_; }
  float* f32() const { return static_cast<float*>(data_); }
  size_t bytes() const { return bytes_; }

 private:
  void* data_ = nullptr;
  size_t bytes_ = 0;
};

// An input of type `from` that the op reads in type `compute` (numel values).
class InPort {
 public:
  InPort() = default;
  InPort(DType from, DType compute, int64_t numel, const std::string& what);
  // The input in the compute type: `data` itself, or its conversion into the port's buffer.
  const void* get(const void* data, cudaStream_t stream);
  // As get(), but without converting again when the port's latest conversion was of the same
  // `data` (a backward reading its forward's input, unchanged since by the ops.h contract).
  const void* get_reused(const void* data, cudaStream_t stream);
  bool converts() const { return from_ != compute_; }

 private:
  DType from_ = DType::f32, compute_ = DType::f32;
  int64_t numel_ = 0;
  DeviceMemory buffer_;
  const void* converted_ = nullptr;  // the data the buffer holds a conversion of
};

// An output of type `to` that the op writes in type `compute` (numel values).
class OutPort {
 public:
  OutPort() = default;
  OutPort(DType compute, DType to, int64_t numel, const std::string& what);
  // Where the op writes its result: `data` itself, or the port's buffer.
  void* target(void* data) { return converts() ? buffer_.get() : data; }
  // Converts what the op wrote into `data` (nothing to do when the types agree).
  void finish(void* data, cudaStream_t stream);
  bool converts() const { return compute_ != to_; }

 private:
  DType compute_ = DType::f32, to_ = DType::f32;
  int64_t numel_ = 0;
  DeviceMemory buffer_;
};

// The data types the CUDA ops compute activations in; others are a planning error naming `what`.
bool is_float_dtype(DType t);
void check_activation_desc(const TensorDesc& desc, const std::string& what);

// The desc of an op's output: a request "any" gets (dims, act_dtype) plain; a fixed request must
// be plain with `dims` and a float type, and is honoured.
TensorDesc output_desc(const TensorDesc& requested, const Shape& dims, DType act_dtype, const std::string& what);

}  // namespace ts::cuda
