// Dropout layer (see dropout.h).
#include "nn/layers/dropout.h"

#include <cstring>

namespace ts {

Dropout::Dropout(std::string name, double p) : Layer(std::move(name)), p_(p) {}

Shape Dropout::setup(const std::vector<Shape>& src_shapes) {
  expect_inputs(src_shapes, 1);
  if (!(p_ >= 0.0 && p_ < 1.0)) fail("probability must be in [0, 1), got " + std::to_string(p_));
  src_shapes_ = src_shapes;
  dst_shape_ = src_shapes[0];
  return dst_shape_;
}

void Dropout::init(Rng& rng) { rng_ = Rng(rng.next_u64()); }

void Dropout::set_batch(int64_t mb) {
  Layer::set_batch(mb);
  mask_.resize(static_cast<size_t>(mb * dst_shape_.numel()));
}

// src (mb, n) -> dst (mb, n)
void Dropout::forward(Backend& backend, const std::vector<const float*>& srcs, float* dst,
                      Mode mode) {
  const int64_t n = mb_ * dst_shape_.numel();
  last_inference_ = mode == Mode::inference || p_ == 0.0;
  if (last_inference_) {
    backend.copy(n, srcs[0], dst);
    return;
  }
  for (int64_t i = 0; i < n; ++i) mask_[static_cast<size_t>(i)] = rng_.uniform() >= p_ ? 1 : 0;
  backend.dropout_apply(n, mask_.data(), static_cast<float>(1.0 / (1.0 - p_)), srcs[0], dst);
}

void Dropout::backward(Backend& backend, const std::vector<const float*>&, const float*,
                       const float* diff_dst, const std::vector<float*>& diff_srcs) {
  if (!diff_srcs[0]) return;
  const int64_t n = mb_ * dst_shape_.numel();
  if (last_inference_) {
    backend.copy(n, diff_dst, diff_srcs[0]);
    return;
  }
  backend.dropout_apply(n, mask_.data(), static_cast<float>(1.0 / (1.0 - p_)), diff_dst,
                        diff_srcs[0]);
}

LayerInfo Dropout::info() const {
  LayerInfo row = Layer::info();
  row.descriptor = "dropout:p" + std::to_string(p_).substr(0, 4) + "_n" +
                   std::to_string(dst_shape_.numel());
  row.flops = dst_shape_.numel();
  return row;
}

}  // namespace ts
