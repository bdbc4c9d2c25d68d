// Names and small helpers of the backend API (backend.h, tensor.h, device_buffer.h).
#include "backend/backend.h"

#include "core/error.h"

namespace ts {

const char* precision_name(Precision p) {
  switch (p) {
    case Precision::fp32: return "fp32";
    case Precision::bf16: return "bf16";
    case Precision::fp16: return "fp16";
    case Precision::tf32: return "tf32";
  }
  return "unknown";
}

const char* algorithm_choice_name(AlgorithmChoice c) {
  switch (c) {
    case AlgorithmChoice::find: return "find";
    case AlgorithmChoice::heuristic: return "heuristic";
    case AlgorithmChoice::deterministic: return "deterministic";
  }
  return "unknown";
}

std::vector<AlgorithmChoice> all_algorithm_choices() {
  return {AlgorithmChoice::find, AlgorithmChoice::heuristic, AlgorithmChoice::deterministic};
}

const char* conv_api_name(ConvApi api) { return api == ConvApi::graph ? "graph" : "legacy"; }

std::vector<ConvApi> all_conv_apis() { return {ConvApi::legacy, ConvApi::graph}; }

std::vector<std::string> known_backends() { return {"ref", "cpu", "cuda"}; }

const char* dtype_name(DType dtype) {
  switch (dtype) {
    case DType::f32: return "f32";
    case DType::bf16: return "bf16";
    case DType::f16: return "f16";
    case DType::i32: return "i32";
    case DType::u8: return "u8";
  }
  return "unknown";
}

size_t dtype_bytes(DType dtype) {
  switch (dtype) {
    case DType::f32:
    case DType::i32: return 4;
    case DType::bf16:
    case DType::f16: return 2;
    case DType::u8: return 1;
  }
  return 0;
}

TensorDesc TensorDesc::plain(Shape dims, DType dtype) {
  TensorDesc d;
  d.bytes = static_cast<size_t>(dims.numel()) * dtype_bytes(dtype);
  d.dims = std::move(dims);
  d.dtype = dtype;
  d.layout = kPlainLayout;
  return d;
}

TensorDesc TensorDesc::any(Shape dims, DType dtype) {
  TensorDesc d;
  d.dims = std::move(dims);
  d.dtype = dtype;
  d.layout = kAnyLayout;
  return d;
}

std::string TensorDesc::str() const {
  std::string layout_text = layout == kPlainLayout ? "plain" : layout == kAnyLayout ? "any" : "L" + std::to_string(layout);
  return dims.str() + ":" + dtype_name(dtype) + ":" + layout_text;
}

void DeviceBuffer::reset() {
  if (data_ && owner_) owner_->release(data_, bytes_, host_);
  owner_ = nullptr;
  data_ = nullptr;
  bytes_ = 0;
}

}  // namespace ts
