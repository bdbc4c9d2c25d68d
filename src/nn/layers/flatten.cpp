// Flatten layer (see flatten.h).
#include "nn/layers/flatten.h"

namespace ts {

Shape Flatten::setup(const std::vector<Shape>& src_shapes) {
  expect_inputs(src_shapes, 1);
  return set_shapes(src_shapes, Shape{src_shapes[0].numel()});
}

// The flattened tensor keeps its input's desc (its bytes and the backend's layout): a copy, and
// the reader (fc) reads (mb, c, h, w) as (mb, c*h*w) in whatever layout it comes.
TensorDesc Flatten::plan(Backend&, int64_t mb, const std::vector<TensorDesc>& srcs) {
  plan_batch(mb);
  return srcs[0];
}

void Flatten::forward(Backend& backend, const std::vector<Tensor>& srcs, const Tensor& dst, Mode) {
  backend.copy(dst.data, srcs[0].data, srcs[0].desc.bytes);
}

void Flatten::backward(Backend& backend, const std::vector<Tensor>&, const Tensor&, const Tensor& diff_dst,
                       const std::vector<Tensor>& diff_srcs) {
  if (diff_srcs[0]) backend.copy(diff_srcs[0].data, diff_dst.data, diff_dst.desc.bytes);
}

LayerInfo Flatten::info() const {
  LayerInfo row = Layer::info();
  row.descriptor = "flatten:n" + std::to_string(dst_shape_.numel());
  return row;
}

}  // namespace ts
