// Batch normalisation layer (see batch_norm.h).
#include "nn/layers/batch_norm.h"

namespace ts {

BatchNorm::BatchNorm(std::string name, float eps, float momentum)
    : Layer(std::move(name)), momentum_(momentum) {
  desc_.eps = eps;
}

Shape BatchNorm::setup(const std::vector<Shape>& src_shapes) {
  expect_inputs(src_shapes, 1);
  const Shape& s = src_shapes[0];
  if (s.rank() != 3 && s.rank() != 1) fail("expects a (C,H,W) or (C) input, got " + s.str());
  desc_.mb = 1;
  desc_.c = s[0];
  desc_.h = s.rank() == 3 ? s[1] : 1;
  desc_.w = s.rank() == 3 ? s[2] : 1;
  mean_.resize(static_cast<size_t>(desc_.c));
  variance_.resize(static_cast<size_t>(desc_.c));
  src_shapes_ = src_shapes;
  dst_shape_ = s;
  return dst_shape_;
}

void BatchNorm::init(Rng&) {
  for (int64_t i = 0; i < desc_.c; ++i) {
    params_[i] = 1.0f;            // scale
    params_[desc_.c + i] = 0.0f;  // shift
    state_[i] = 0.0f;             // running mean
    state_[desc_.c + i] = 1.0f;   // running variance
  }
}

void BatchNorm::set_batch(int64_t mb) {
  Layer::set_batch(mb);
  desc_.mb = mb;
  scratch_diff_src_.resize(0);
}

// src (mb,c,h,w) -> dst (mb,c,h,w)
void BatchNorm::forward(Backend& backend, const std::vector<const float*>& srcs, float* dst,
                        Mode mode) {
  const float* scale = params_;
  const float* shift = params_ + desc_.c;
  float* running_mean = state_;
  float* running_variance = state_ + desc_.c;
  if (mode == Mode::inference) {
    backend.batchnorm_forward_inference(desc_, srcs[0], scale, shift, running_mean,
                                        running_variance, dst);
    return;
  }
  backend.batchnorm_forward_training(desc_, srcs[0], scale, shift, dst, mean_.data(),
                                     variance_.data());
  // Running statistics: c elements of bookkeeping, not a tensor op.
  const int64_t n = desc_.mb * desc_.h * desc_.w;
  const float unbias = n > 1 ? static_cast<float>(n) / static_cast<float>(n - 1) : 1.0f;
  for (int64_t i = 0; i < desc_.c; ++i) {
    running_mean[i] = (1.0f - momentum_) * running_mean[i] + momentum_ * mean_[i];
    running_variance[i] =
        (1.0f - momentum_) * running_variance[i] + momentum_ * variance_[i] * unbias;
  }
}

// diff_dst (mb,c,h,w) -> diff_src (mb,c,h,w), diff_scale (c), diff_shift (c)
void BatchNorm::backward(Backend& backend, const std::vector<const float*>& srcs, const float*,
                         const float* diff_dst, const std::vector<float*>& diff_srcs) {
  float* diff_src = diff_srcs[0];
  if (!diff_src) {
    // The backend computes diff_src and diff_scale/shift together.
    size_t n = static_cast<size_t>(desc_.mb * desc_.c * desc_.h * desc_.w);
    if (scratch_diff_src_.size() != n) scratch_diff_src_.resize(n);
    diff_src = scratch_diff_src_.data();
  }
  backend.batchnorm_backward(desc_, srcs[0], diff_dst, params_, mean_.data(), variance_.data(),
                             diff_src, grads_, grads_ + desc_.c);
}

bool BatchNorm::fuse_relu() {
  desc_.relu = true;  // batch norm + ReLU (oneDNN fuse_norm_relu)
  return true;
}

LayerInfo BatchNorm::info() const {
  BnDesc d = desc_;
  d.mb = 1;
  d.relu = false;  // the layer table lists the ReLU as its own row
  LayerInfo row = Layer::info();
  row.descriptor = d.str();
  row.flops = 2 * d.c * d.h * d.w;
  return row;
}

}  // namespace ts
