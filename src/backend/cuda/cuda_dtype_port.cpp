// Ports converting data types at the edges of the CUDA ops (cuda_dtype_port.h).
#include "backend/cuda/cuda_dtype_port.h"

#include <utility>

#include "backend/cuda/cuda_check.h"
#include "backend/cuda/cuda_kernels.h"
#include "core/error.h"

namespace ts::cuda {

// ---- device memory --------------------------------------------------------------------------
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

// ---- ports ----------------------------------------------------------------------------------
InPort::InPort(DType from, DType compute, int64_t numel, const std::string& what)
    : from_(from), compute_(compute), numel_(numel) {
  if (converts()) buffer_ = DeviceMemory(static_cast<size_t>(numel) * dtype_bytes(compute), what);
}

const void* InPort::get(const void* data, cudaStream_t stream) {
  if (!converts()) return data;
  convert(data, from_, buffer_.get(), compute_, numel_, stream);
  converted_ = data;
  return buffer_.get();
}

const void* InPort::get_reused(const void* data, cudaStream_t stream) {
  if (converts() && converted_ == data) return buffer_.get();
  return get(data, stream);
}

OutPort::OutPort(DType compute, DType to, int64_t numel, const std::string& what)
    : compute_(compute), to_(to), numel_(numel) {
  if (converts()) buffer_ = DeviceMemory(static_cast<size_t>(numel) * dtype_bytes(compute), what);
}

void OutPort::finish(void* data, cudaStream_t stream) {
  if (converts()) convert(buffer_.get(), compute_, data, to_, numel_, stream);
}

// ---- descs ----------------------------------------------------------------------------------
bool is_float_dtype(DType t) { return t == DType::f32 || t == DType::f16 || t == DType::bf16; }

void check_activation_desc(const TensorDesc& desc, const std::string& what) {
  if (!desc.is_plain())
    throw ConfigError("cuda backend: " + what + ": tensor " + desc.str() +
                      " is not plain; the CUDA ops read and write plain (row-major NCHW) tensors only");
  if (!is_float_dtype(desc.dtype))
    throw ConfigError("cuda backend: " + what + ": tensor " + desc.str() + " has data type " +
                      dtype_name(desc.dtype) + "; accepted: f32, f16, bf16");
}

TensorDesc output_desc(const TensorDesc& requested, const Shape& dims, DType act_dtype, const std::string& what) {
  if (requested.is_any()) return TensorDesc::plain(dims, act_dtype);
  check_activation_desc(requested, what + " output");
  if (requested.dims.numel() != dims.numel())
    throw ConfigError("cuda backend: " + what + ": output requested as " + requested.str() + " but the op writes " +
                      dims.str());
  return requested;
}

}  // namespace ts::cuda
