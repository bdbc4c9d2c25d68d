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

const char* op_name(Op op) {
  switch (op) {
    case Op::conv: return "conv";
    case Op::pool: return "pool";
    case Op::fc: return "fc";
    case Op::batchnorm: return "batchnorm";
    case Op::eltwise: return "eltwise";
    case Op::softmax_xent: return "softmax_xent";
    case Op::mse: return "mse";
    case Op::add: return "add";
    case Op::concat: return "concat";
    case Op::dropout: return "dropout";
    case Op::sgd: return "sgd";
  }
  return "unknown";
}

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

void Backend::begin_capture() {
  throw ConfigError("backend '" + name() + "' cannot capture and replay work (cuda.graphs needs backend: cuda)");
}
int Backend::end_capture() { throw ConfigError("backend '" + name() + "' cannot capture work"); }
void Backend::replay(int) { throw ConfigError("backend '" + name() + "' cannot replay work"); }

void DeviceBuffer::reset() {
  if (data_ && owner_) owner_->release(data_, bytes_, host_);
  owner_ = nullptr;
  data_ = nullptr;
  bytes_ = 0;
}

// Loss scaling on the device, for host-memory backends: the state is host memory, and every call
// runs at once.

void Backend::unscale_check(int64_t n, LossScaleState* state, float* x) {
  state->nonfinite = scale_check_finite(n, 1.0f / state->scale, x) ? 0 : 1;
}

void Backend::sgd_step_if_finite(const LossScaleState* state, int64_t n, float lr, float momentum,
                                 float weight_decay, bool nesterov, float* weights, const float* grads,
                                 float* velocity) {
  if (state->nonfinite == 0) sgd_step(n, lr, momentum, weight_decay, nesterov, weights, grads, velocity);
}

void Backend::update_loss_scale(LossScaleState* state, const LossScaleRule& rule) {
  apply_loss_scale_rule(*state, rule);
}

}  // namespace ts
