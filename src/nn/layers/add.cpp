// Residual add layer (see add.h).
#include "nn/layers/add.h"

namespace ts {

Shape Add::setup(const std::vector<Shape>& src_shapes) {
  if (src_shapes.size() < 2) fail("needs at least two inputs");
  for (const Shape& s : src_shapes)
    if (s != src_shapes[0])
      fail("inputs must have the same shape, got " + src_shapes[0].str() + " and " + s.str());
  return set_shapes(src_shapes, src_shapes[0]);
}

TensorDesc Add::plan(Backend& backend, int64_t mb, const std::vector<TensorDesc>& srcs) {
  plan_batch(mb);
  ops_.clear();
  ops_.push_back(backend.plan_add(srcs[0], srcs[1], relu_));
  for (size_t i = 2; i < srcs.size(); ++i) ops_.push_back(backend.plan_add(ops_[0]->dst_desc(), srcs[i], false));
  return ops_[0]->dst_desc();
}

// srcs[i] (mb, n) -> dst (mb, n)
void Add::forward(Backend&, const std::vector<Tensor>& srcs, const Tensor& dst, Mode) {
  ops_[0]->forward(srcs[0], srcs[1], dst);
  for (size_t i = 2; i < srcs.size(); ++i) ops_[i - 1]->forward(dst, srcs[i], dst);
}

bool Add::fuse_relu() {
  relu_ = src_shapes_.size() == 2;
  return relu_;
}

// Every input's gradient is diff_dst, in that input's desc.
void Add::backward(Backend& backend, const std::vector<Tensor>&, const Tensor&, const Tensor& diff_dst,
                   const std::vector<Tensor>& diff_srcs) {
  for (const Tensor& diff_src : diff_srcs)
    if (diff_src) backend.reorder(diff_dst, diff_src);
}

LayerInfo Add::info() const {
  LayerInfo row = Layer::info();
  row.descriptor = "add:n" + std::to_string(dst_shape_.numel()) + "_inputs" +
                   std::to_string(src_shapes_.size());
  row.flops = static_cast<int64_t>(src_shapes_.size() - 1) * dst_shape_.numel();
  return row;
}

}  // namespace ts
