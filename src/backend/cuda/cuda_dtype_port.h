// Data types and layouts at the edges of a planned CUDA op (cuda_context.h conventions). An op
// computes in one data type (act_dtype() when it was planned) and one layout (plain or NHWC,
// cuda_layout.h); a tensor of another type or layout passes through a port: an input is
// converted into a buffer the op owns, an output is computed into such a buffer and converted
// into the caller's memory. Where type and layout agree a port is a no-op and owns nothing.
// Conversions only enqueue on the stream (ts::cuda::convert_tensor).
#pragma once

#include <cstddef>
#include <cstdint>
#include <string>

#include <cuda_runtime.h>

#include "backend/cuda/cuda_device_memory.h"
#include "backend/tensor.h"

namespace ts::cuda {

// An input of type `from` that the op reads in type `compute` (numel values, same layout), or
// an input in desc `from` that the op reads in desc `compute` (same dims; type and layout may
// differ).
class InPort {
 public:
  InPort() = default;
  InPort(DType from, DType compute, int64_t numel, const std::string& what);
  InPort(const TensorDesc& from, const TensorDesc& compute, const std::string& what);
  // The input in the compute type: `data` itself, or its conversion into the port's buffer.
  const void* get(const void* data, cudaStream_t stream);
  // As get(), but without converting again when the port's latest conversion was of the same
  // `data` (a backward reading its forward's input, unchanged since by the ops.h contract).
  const void* get_reused(const void* data, cudaStream_t stream);
  bool converts() const;  // type or layout differ

 private:
  TensorDesc from_, compute_;
  DeviceMemory buffer_;
  const void* converted_ = nullptr;  // the data the buffer holds a conversion of
};

// An output of type `to` that the op writes in type `compute` (numel values, same layout), or
// an output of desc `to` that the op writes in desc `compute`.
class OutPort {
 public:
  OutPort() = default;
  OutPort(DType compute, DType to, int64_t numel, const std::string& what);
  OutPort(const TensorDesc& compute, const TensorDesc& to, const std::string& what);
  // Where the op writes its result: `data` itself, or the port's buffer.
  void* target(void* data) { return converts() ? buffer_.get() : data; }
  // Converts what the op wrote into `data` (nothing to do when the types agree).
  void finish(void* data, cudaStream_t stream);
  bool converts() const;  // type or layout differ

 private:
  TensorDesc compute_, to_;
  DeviceMemory buffer_;
};

// The data types the CUDA ops compute activations in, in plain or 4-D NHWC layout; others are a
// planning error naming `what`.
void check_activation_desc(const TensorDesc& desc, const std::string& what);

// The desc of an op's output: a request "any" gets (dims, act_dtype) in `layout` (plain or NHWC);
// a fixed request must be plain or 4-D NHWC with `dims`' count and a float type, and is honoured.
TensorDesc output_desc(const TensorDesc& requested, const Shape& dims, DType act_dtype, const std::string& what,
                       LayoutId layout = kPlainLayout);

}  // namespace ts::cuda
