// Names and small helpers of the backend API (backend.h, tensor.h, device_buffer.h).
#include "backend/backend.h"

#include "core/enum_names.h"

namespace ts {

namespace {

constexpr EnumName<Precision> kPrecisions[] = {
    {Precision::fp32, "fp32"}, {Precision::bf16, "bf16"}, {Precision::fp16, "fp16"}, {Precision::tf32, "tf32"}};
constexpr EnumName<AlgorithmChoice> kAlgorithmChoices[] = {{AlgorithmChoice::find, "find"},
                                                           {AlgorithmChoice::heuristic, "heuristic"},
                                                           {AlgorithmChoice::deterministic, "deterministic"}};
constexpr EnumName<DType> kDTypes[] = {
    {DType::f32, "f32"}, {DType::bf16, "bf16"}, {DType::f16, "f16"}, {DType::i32, "i32"}, {DType::u8, "u8"}};

}  // namespace

const char* precision_name(Precision p) { return name_in(kPrecisions, p, "unknown"); }
const char* algorithm_choice_name(AlgorithmChoice c) { return name_in(kAlgorithmChoices, c, "unknown"); }
std::vector<AlgorithmChoice> all_algorithm_choices() { return values_in(kAlgorithmChoices); }

const char* conv_api_name(ConvApi api) { return api == ConvApi::graph ? "graph" : "legacy"; }

std::vector<ConvApi> all_conv_apis() { return {ConvApi::legacy, ConvApi::graph}; }

std::vector<std::string> known_backends() { return {"ref", "cpu", "cuda"}; }

const char* dtype_name(DType dtype) { return name_in(kDTypes, dtype, "unknown"); }

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
