// Fully connected layer (see fully_connected.h).
#include "nn/layers/fully_connected.h"

namespace ts {

FullyConnected::FullyConnected(std::string name, int64_t outputs, bool bias, Init init)
    : Layer(std::move(name)), init_(init) {
  desc_.oc = outputs;
  desc_.bias = bias;
}

Shape FullyConnected::setup(const std::vector<Shape>& src_shapes) {
  expect_inputs(src_shapes, 1);
  if (desc_.oc < 1) fail("needs at least one output");
  desc_.mb = 1;
  desc_.ic = src_shapes[0].numel();
  return set_shapes(src_shapes, Shape{desc_.oc});
}

int64_t FullyConnected::param_count() const {
  return desc_.oc * desc_.ic + (desc_.bias ? desc_.oc : 0);
}

void FullyConnected::init(Rng& rng, float* params, float*) {
  init_fill(init_, rng, desc_.ic, desc_.oc, params, desc_.oc * desc_.ic);
  if (desc_.bias)
    for (int64_t i = 0; i < desc_.oc; ++i) params[desc_.oc * desc_.ic + i] = 0.0f;
}

TensorDesc FullyConnected::plan(Backend& backend, int64_t mb, const std::vector<TensorDesc>& srcs) {
  plan_batch(mb);
  desc_.mb = mb;
  op_ = backend.plan_fc(desc_, srcs[0], TensorDesc::any(Shape{mb, desc_.oc}));
  return op_->dst_desc();
}

// src (mb, ic) -> dst (mb, oc)
void FullyConnected::forward(Backend&, const std::vector<Tensor>& srcs, const Tensor& dst, Mode) {
  const float* bia = desc_.bias ? params_ + desc_.oc * desc_.ic : nullptr;
  op_->forward(srcs[0], params_, bia, dst);
}

// diff_dst (mb, oc) -> diff_src (mb, ic), diff_wei (oc, ic), diff_bia (oc)
void FullyConnected::backward(Backend&, const std::vector<Tensor>& srcs, const Tensor&,
                              const Tensor& diff_dst, const std::vector<Tensor>& diff_srcs) {
  float* diff_bia = desc_.bias ? grads_ + desc_.oc * desc_.ic : nullptr;
  op_->backward(srcs[0], diff_dst, params_, diff_srcs[0], grads_, diff_bia);
}

LayerInfo FullyConnected::info() const {
  FcDesc d = desc_;
  d.mb = 1;
  LayerInfo row = Layer::info();
  row.descriptor = d.str();
  row.flops = d.flops() + (d.bias ? d.oc : 0);
  return row;
}

}  // namespace ts
