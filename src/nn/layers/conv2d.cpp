// 2-D convolution layer (see conv2d.h).
#include "nn/layers/conv2d.h"

namespace ts {

Conv2d::Conv2d(std::string name, Conv2dOptions options)
    : Layer(std::move(name)), options_(options) {}

Conv2d::Conv2d(std::string name, int64_t out_channels, int64_t kernel, int64_t stride,
               int64_t padding, bool bias, Init init)
    : Conv2d(std::move(name), Conv2dOptions{.out_channels = out_channels, .kh = kernel, .kw = kernel, .sh = stride,
                                            .sw = stride, .ph = padding, .pw = padding, .bias = bias, .init = init}) {}

Shape Conv2d::setup(const std::vector<Shape>& src_shapes) {
  expect_inputs(src_shapes, 1);
  const Shape& s = src_shapes[0];
  if (s.rank() != 3) fail("expects a (C,H,W) input, got " + s.str());
  const Conv2dOptions& o = options_;
  if (o.groups < 1 || s[0] % o.groups != 0 || o.out_channels % o.groups != 0)
    fail("channels " + std::to_string(s[0]) + " -> " + std::to_string(o.out_channels) +
         " are not divisible by groups " + std::to_string(o.groups));
  if (o.kh < 1 || o.kw < 1 || o.sh < 1 || o.sw < 1 || o.ph < 0 || o.pw < 0)
    fail("kernel and stride must be >= 1, padding >= 0");
  desc_ = ConvDesc{.mb = 1, .ic = s[0], .oc = o.out_channels, .ih = s[1], .iw = s[2], .kh = o.kh, .kw = o.kw,
                   .sh = o.sh, .sw = o.sw, .ph = o.ph, .pw = o.pw, .groups = o.groups, .bias = o.bias};
  if (s[1] + 2 * o.ph < o.kh || s[2] + 2 * o.pw < o.kw)
    fail("kernel " + std::to_string(o.kh) + "x" + std::to_string(o.kw) +
         " does not fit the padded input " + s.str());
  return set_shapes(src_shapes, Shape{desc_.oc, desc_.oh(), desc_.ow()});
}

int64_t Conv2d::param_count() const {
  return desc_.weight_count() + (desc_.bias ? desc_.oc : 0);
}

void Conv2d::init(Rng& rng, float* params, float*) {
  int64_t fan_in = desc_.ic / desc_.groups * desc_.kh * desc_.kw;
  int64_t fan_out = desc_.oc / desc_.groups * desc_.kh * desc_.kw;
  init_fill(options_.init, rng, fan_in, fan_out, params, desc_.weight_count());
  if (desc_.bias)
    for (int64_t i = 0; i < desc_.oc; ++i) params[desc_.weight_count() + i] = 0.0f;
}

TensorDesc Conv2d::plan(Backend& backend, int64_t mb, const std::vector<TensorDesc>& srcs) {
  plan_batch(mb);
  desc_.mb = mb;
  op_ = backend.plan_conv(desc_, srcs[0], TensorDesc::any(Shape{mb, desc_.oc, desc_.oh(), desc_.ow()}));
  return op_->dst_desc();
}

// src (mb,ic,ih,iw) -> dst (mb,oc,oh,ow)
void Conv2d::forward(Backend&, const std::vector<Tensor>& srcs, const Tensor& dst, Mode) {
  const float* bia = desc_.bias ? params_ + desc_.weight_count() : nullptr;
  op_->forward(srcs[0], params_, bia, dst);
}

// diff_dst (mb,oc,oh,ow) -> diff_src (mb,ic,ih,iw), diff_wei, diff_bia
void Conv2d::backward(Backend&, const std::vector<Tensor>& srcs, const Tensor&, const Tensor& diff_dst,
                      const std::vector<Tensor>& diff_srcs) {
  float* diff_bia = desc_.bias ? grads_ + desc_.weight_count() : nullptr;
  op_->backward(srcs[0], diff_dst, params_, diff_srcs[0], grads_, diff_bia);
}

bool Conv2d::fuse_relu() {
  desc_.relu = true;  // conv + bias + ReLU post-op
  return true;
}

LayerInfo Conv2d::info() const {
  ConvDesc d = desc_;
  d.mb = 1;
  d.relu = false;  // the layer table lists the ReLU as its own row
  LayerInfo row = Layer::info();
  row.descriptor = d.str();
  row.flops = d.flops() + (d.bias ? d.oc * d.oh() * d.ow() : 0);
  return row;
}

}  // namespace ts
