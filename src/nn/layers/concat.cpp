// Channel concatenation layer (see concat.h).
#include "nn/layers/concat.h"

namespace ts {

Shape Concat::setup(const std::vector<Shape>& src_shapes) {
  if (src_shapes.empty()) fail("needs at least one input");
  const Shape& first = src_shapes[0];
  if (first.rank() < 1) fail("inputs need a channel axis");
  channels_.clear();
  int64_t total = 0;
  for (const Shape& s : src_shapes) {
    bool same_rest = s.rank() == first.rank();
    for (int d = 1; same_rest && d < s.rank(); ++d) same_rest = s[d] == first[d];
    if (!same_rest)
      fail("inputs must agree in all but the channel axis, got " + first.str() + " and " +
           s.str());
    channels_.push_back(s[0]);
    total += s[0];
  }
  hw_ = first.numel() / first[0];
  Shape dst = first;
  dst[0] = total;
  return set_shapes(src_shapes, dst);
}

TensorDesc Concat::plan(Backend& backend, int64_t mb, const std::vector<TensorDesc>& srcs) {
  plan_batch(mb);
  Shape dims = srcs[0].dims;
  dims[1] = dst_shape_[0];
  op_ = backend.plan_concat(srcs, TensorDesc::any(dims));
  return op_->dst_desc();
}

// srcs[i] (mb, c_i, h, w) -> dst (mb, sum c_i, h, w)
void Concat::forward(Backend&, const std::vector<Tensor>& srcs, const Tensor& dst, Mode) {
  op_->forward(srcs, dst);
}

// diff_dst (mb, sum c_i, h, w) -> diff_srcs[i] (mb, c_i, h, w); inputs without a gradient skipped
void Concat::backward(Backend&, const std::vector<Tensor>&, const Tensor&, const Tensor& diff_dst,
                      const std::vector<Tensor>& diff_srcs) {
  op_->backward(diff_dst, diff_srcs);
}

LayerInfo Concat::info() const {
  LayerInfo row = Layer::info();
  row.descriptor = "concat:c" + std::to_string(dst_shape_[0]) + "_hw" + std::to_string(hw_) +
                   "_inputs" + std::to_string(channels_.size());
  return row;
}

}  // namespace ts
