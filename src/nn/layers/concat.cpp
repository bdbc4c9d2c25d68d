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
  src_shapes_ = src_shapes;
  dst_shape_ = first;
  dst_shape_[0] = total;
  return dst_shape_;
}

void Concat::set_batch(int64_t mb) {
  Layer::set_batch(mb);
  scratch_.assign(channels_.size(), {});
}

// srcs[i] (mb, c_i, hw) -> dst (mb, sum c_i, hw)
void Concat::forward(Backend& backend, const std::vector<const float*>& srcs, float* dst, Mode) {
  backend.concat_forward(mb_, hw_, channels_, srcs, dst);
}

// diff_dst (mb, sum c_i, hw) -> diff_srcs[i] (mb, c_i, hw)
void Concat::backward(Backend& backend, const std::vector<const float*>&, const float*,
                      const float* diff_dst, const std::vector<float*>& diff_srcs) {
  scratch_ptrs_ = diff_srcs;
  bool any = false;
  for (size_t i = 0; i < diff_srcs.size(); ++i) {
    if (diff_srcs[i]) {
      any = true;
      continue;
    }
    scratch_[i].resize(static_cast<size_t>(mb_ * channels_[i] * hw_));
    scratch_ptrs_[i] = scratch_[i].data();
  }
  if (any) backend.concat_backward(mb_, hw_, channels_, diff_dst, scratch_ptrs_);
}

LayerInfo Concat::info() const {
  LayerInfo row = Layer::info();
  row.descriptor = "concat:c" + std::to_string(dst_shape_[0]) + "_hw" + std::to_string(hw_) +
                   "_inputs" + std::to_string(channels_.size());
  return row;
}

}  // namespace ts
