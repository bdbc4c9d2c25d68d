// Max, average and global average pooling layers (see pool2d.h).
#include "nn/layers/pool2d.h"

namespace ts {

Pool2d::Pool2d(std::string name, Pool2dOptions options)
    : Layer(std::move(name)), options_(options) {}

Pool2d::Pool2d(std::string name, PoolKind kind, int64_t kernel, int64_t stride, int64_t padding)
    : Pool2d(std::move(name), Pool2dOptions{.kind = kind, .kh = kernel, .kw = kernel, .sh = stride > 0 ? stride : kernel,
                                            .sw = stride > 0 ? stride : kernel, .ph = padding, .pw = padding}) {}

Shape Pool2d::setup(const std::vector<Shape>& src_shapes) {
  expect_inputs(src_shapes, 1);
  const Shape& s = src_shapes[0];
  if (s.rank() != 3) fail("expects a (C,H,W) input, got " + s.str());
  const Pool2dOptions& o = options_;
  if (o.kh < 1 || o.kw < 1 || o.sh < 1 || o.sw < 1 || o.ph < 0 || o.pw < 0)
    fail("kernel and stride must be >= 1, padding >= 0");
  if (o.ph >= o.kh || o.pw >= o.kw) fail("padding must be smaller than the kernel");
  if (s[1] + 2 * o.ph < o.kh || s[2] + 2 * o.pw < o.kw)
    fail("kernel " + std::to_string(o.kh) + "x" + std::to_string(o.kw) +
         " does not fit the input " + s.str());
  desc_ = PoolDesc{.kind = o.kind, .mb = 1, .c = s[0], .ih = s[1], .iw = s[2], .kh = o.kh, .kw = o.kw, .sh = o.sh,
                   .sw = o.sw, .ph = o.ph, .pw = o.pw};
  return set_shapes(src_shapes, Shape{desc_.c, desc_.oh(), desc_.ow()});
}

TensorDesc Pool2d::plan(Backend& backend, int64_t mb, const std::vector<TensorDesc>& srcs) {
  plan_batch(mb);
  desc_.mb = mb;
  op_ = backend.plan_pool(desc_, srcs[0], TensorDesc::any(Shape{mb, desc_.c, desc_.oh(), desc_.ow()}));
  workspace_ = backend.allocate(op_->workspace_bytes());
  return op_->dst_desc();
}

// src (mb,c,ih,iw) -> dst (mb,c,oh,ow)
void Pool2d::forward(Backend&, const std::vector<Tensor>& srcs, const Tensor& dst, Mode) {
  op_->forward(srcs[0], dst, workspace_.data());
}

// diff_dst (mb,c,oh,ow) -> diff_src (mb,c,ih,iw)
void Pool2d::backward(Backend&, const std::vector<Tensor>&, const Tensor&, const Tensor& diff_dst,
                      const std::vector<Tensor>& diff_srcs) {
  if (diff_srcs[0]) op_->backward(diff_dst, workspace_.data(), diff_srcs[0]);
}

// The window is the whole plane, known once the input shape is.
Shape GlobalAvgPool::setup(const std::vector<Shape>& src_shapes) {
  expect_inputs(src_shapes, 1);
  const Shape& s = src_shapes[0];
  if (s.rank() != 3) fail("expects a (C,H,W) input, got " + s.str());
  options_.kh = options_.sh = s[1];
  options_.kw = options_.sw = s[2];
  return Pool2d::setup(src_shapes);
}

LayerInfo Pool2d::info() const {
  PoolDesc d = desc_;
  d.mb = 1;
  LayerInfo row = Layer::info();
  row.descriptor = d.str();
  row.flops = d.c * d.oh() * d.ow() * d.kh * d.kw;
  return row;
}

}  // namespace ts
