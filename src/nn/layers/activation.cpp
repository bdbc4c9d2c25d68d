// Element-wise activation layers (see activation.h).
#include "nn/layers/activation.h"

namespace ts {

Activation::Activation(std::string name, EltwiseKind kind) : Layer(std::move(name)) {
  desc_.kind = kind;
}

std::string Activation::kind() const {
  switch (desc_.kind) {
    case EltwiseKind::relu: return "relu";
    case EltwiseKind::relu6: return "relu6";
    case EltwiseKind::sigmoid: break;
  }
  return "sigmoid";
}

Shape Activation::setup(const std::vector<Shape>& src_shapes) {
  expect_inputs(src_shapes, 1);
  desc_.n = src_shapes[0].numel();
  src_shapes_ = src_shapes;
  dst_shape_ = src_shapes[0];
  return dst_shape_;
}

void Activation::set_batch(int64_t mb) {
  Layer::set_batch(mb);
  desc_.n = mb * dst_shape_.numel();
}

// src (mb, n) -> dst (mb, n)
void Activation::forward(Backend& backend, const std::vector<const float*>& srcs, float* dst,
                         Mode) {
  backend.eltwise_forward(desc_, srcs[0], dst);
}

void Activation::backward(Backend& backend, const std::vector<const float*>& srcs,
                          const float* dst, const float* diff_dst,
                          const std::vector<float*>& diff_srcs) {
  if (diff_srcs[0]) backend.eltwise_backward(desc_, srcs[0], dst, diff_dst, diff_srcs[0]);
}

LayerInfo Activation::info() const {
  EltwiseDesc d = desc_;
  d.n = dst_shape_.numel();
  LayerInfo row = Layer::info();
  row.descriptor = d.str();
  row.flops = d.n * (desc_.kind == EltwiseKind::relu ? 1 : 4);
  return row;
}

}  // namespace ts
