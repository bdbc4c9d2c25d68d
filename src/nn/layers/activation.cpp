// Element-wise activation layers (see activation.h).
#include "nn/layers/activation.h"

namespace ts {

Activation::Activation(std::string name, EltwiseKind kind) : Layer(std::move(name)) {
  desc_.kind = kind;
}

Shape Activation::setup(const std::vector<Shape>& src_shapes) {
  expect_inputs(src_shapes, 1);
  desc_.n = src_shapes[0].numel();
  return set_shapes(src_shapes, src_shapes[0]);
}

TensorDesc Activation::plan(Backend& backend, int64_t mb, const std::vector<TensorDesc>& srcs) {
  plan_batch(mb);
  desc_.n = mb * dst_shape_.numel();
  op_ = backend.plan_eltwise(desc_, srcs[0], TensorDesc::any(srcs[0].dims));
  return op_->dst_desc();
}

// src (mb, n) -> dst (mb, n)
void Activation::forward(Backend&, const std::vector<Tensor>& srcs, const Tensor& dst, Mode) {
  op_->forward(srcs[0], dst);
}

void Activation::backward(Backend&, const std::vector<Tensor>& srcs, const Tensor& dst,
                          const Tensor& diff_dst, const std::vector<Tensor>& diff_srcs) {
  if (diff_srcs[0]) op_->backward(srcs[0], dst, diff_dst, diff_srcs[0]);
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
