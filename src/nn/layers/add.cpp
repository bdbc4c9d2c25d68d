// Residual add layer (see add.h).
#include "nn/layers/add.h"

#include <cstring>

namespace ts {

Shape Add::setup(const std::vector<Shape>& src_shapes) {
  if (src_shapes.size() < 2) fail("needs at least two inputs");
  for (const Shape& s : src_shapes)
    if (s != src_shapes[0])
      fail("inputs must have the same shape, got " + src_shapes[0].str() + " and " + s.str());
  src_shapes_ = src_shapes;
  dst_shape_ = src_shapes[0];
  return dst_shape_;
}

// srcs[i] (mb, n) -> dst (mb, n)
void Add::forward(Backend& backend, const std::vector<const float*>& srcs, float* dst, Mode) {
  const int64_t n = mb_ * dst_shape_.numel();
  if (relu_) {
    backend.add_relu(n, srcs[0], srcs[1], dst);
    return;
  }
  backend.add(n, srcs[0], srcs[1], dst);
  for (size_t i = 2; i < srcs.size(); ++i) backend.add(n, dst, srcs[i], dst);
}

bool Add::fuse_relu() {
  relu_ = src_shapes_.size() == 2;
  return relu_;
}

void Add::backward(Backend& backend, const std::vector<const float*>&, const float*,
                   const float* diff_dst, const std::vector<float*>& diff_srcs) {
  const int64_t n = mb_ * dst_shape_.numel();
  for (float* diff_src : diff_srcs)
    if (diff_src) backend.copy(n, diff_dst, diff_src);
}

LayerInfo Add::info() const {
  LayerInfo row = Layer::info();
  row.descriptor = "add:n" + std::to_string(dst_shape_.numel()) + "_inputs" +
                   std::to_string(src_shapes_.size());
  row.flops = static_cast<int64_t>(src_shapes_.size() - 1) * dst_shape_.numel();
  return row;
}

}  // namespace ts
