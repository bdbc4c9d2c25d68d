// Dropout layer (see dropout.h).
#include "nn/layers/dropout.h"

#include <algorithm>
#include <array>

namespace ts {

Dropout::Dropout(std::string name, double p) : Layer(std::move(name)), p_(p) {}

Shape Dropout::setup(const std::vector<Shape>& src_shapes) {
  expect_inputs(src_shapes, 1);
  if (!(p_ >= 0.0 && p_ < 1.0)) fail("probability must be in [0, 1), got " + std::to_string(p_));
  return set_shapes(src_shapes, src_shapes[0]);
}

void Dropout::init(Rng& rng, float*, float*) { rng_ = Rng(rng.next_u64()); }

std::vector<uint64_t> Dropout::rng_state() const {
  const auto words = rng_.state();
  return {words.begin(), words.end()};
}

void Dropout::set_rng_state(const std::vector<uint64_t>& words) {
  if (words.size() != Rng::kStateWords)
    fail("a random stream of " + std::to_string(words.size()) + " words was given, " +
         std::to_string(Rng::kStateWords) + " expected");
  std::array<uint64_t, Rng::kStateWords> state;
  std::copy(words.begin(), words.end(), state.begin());
  rng_.set_state(state);
}

TensorDesc Dropout::plan(Backend& backend, int64_t mb, const std::vector<TensorDesc>& srcs) {
  plan_batch(mb);
  op_ = backend.plan_dropout(srcs[0]);
  mask_.assign(static_cast<size_t>(mb * dst_shape_.numel()), 0);
  device_mask_ = backend.allocate(mask_.size());
  device_mask_ones_ = false;
  return op_->dst_desc();
}

// src (mb, n) -> dst (mb, n). The mask is drawn from the layer's seeded stream on the host, so
// every backend drops the same elements; inference keeps every element (mask of ones, scale 1).
void Dropout::forward(Backend& backend, const std::vector<Tensor>& srcs, const Tensor& dst, Mode mode) {
  const bool keep_all = mode == Mode::inference || p_ == 0.0;
  if (!keep_all) {
    for (auto& m : mask_) m = rng_.uniform() >= p_ ? 1 : 0;
    backend.copy_from_host(device_mask_.data(), mask_.data(), mask_.size());
  } else if (!device_mask_ones_) {
    std::fill(mask_.begin(), mask_.end(), uint8_t{1});
    backend.copy_from_host(device_mask_.data(), mask_.data(), mask_.size());
  }
  device_mask_ones_ = keep_all;
  last_scale_ = keep_all ? 1.0f : static_cast<float>(1.0 / (1.0 - p_));
  op_->forward(static_cast<const uint8_t*>(device_mask_.data()), last_scale_, srcs[0], dst);
}

void Dropout::backward(Backend&, const std::vector<Tensor>&, const Tensor&, const Tensor& diff_dst,
                       const std::vector<Tensor>& diff_srcs) {
  if (diff_srcs[0])
    op_->backward(static_cast<const uint8_t*>(device_mask_.data()), last_scale_, diff_dst, diff_srcs[0]);
}

LayerInfo Dropout::info() const {
  LayerInfo row = Layer::info();
  row.descriptor = "dropout:p" + std::to_string(p_).substr(0, 4) + "_n" +
                   std::to_string(dst_shape_.numel());
  row.flops = dst_shape_.numel();
  return row;
}

}  // namespace ts
