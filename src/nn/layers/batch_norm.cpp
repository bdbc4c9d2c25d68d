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
  return set_shapes(src_shapes, s);
}

void BatchNorm::init(Rng&, float* params, float* state) {
  for (int64_t i = 0; i < desc_.c; ++i) {
    params[i] = 1.0f;            // scale
    params[desc_.c + i] = 0.0f;  // shift
    state[i] = 0.0f;             // running mean
    state[desc_.c + i] = 1.0f;   // running variance
  }
}

TensorDesc BatchNorm::plan(Backend& backend, int64_t mb, const std::vector<TensorDesc>& srcs) {
  plan_batch(mb);
  desc_.mb = mb;
  op_ = backend.plan_batchnorm(desc_, srcs[0], TensorDesc::any(srcs[0].dims));
  const size_t channel_bytes = static_cast<size_t>(desc_.c) * sizeof(float);
  mean_ = backend.allocate(channel_bytes);
  variance_ = backend.allocate(channel_bytes);
  scratch_diff_src_ = DeviceBuffer();
  return op_->dst_desc();
}

// src (mb,c,h,w) -> dst (mb,c,h,w)
void BatchNorm::forward(Backend& backend, const std::vector<Tensor>& srcs, const Tensor& dst, Mode mode) {
  const float* scale = params_;
  const float* shift = params_ + desc_.c;
  float* running_mean = state_;
  float* running_variance = state_ + desc_.c;
  if (mode == Mode::inference) {
    op_->forward_inference(srcs[0], scale, shift, running_mean, running_variance, dst);
    return;
  }
  op_->forward_training(srcs[0], scale, shift, dst, mean_.f32(), variance_.f32());
  // Running statistics (c values each): running = (1 - momentum) running + momentum batch, with
  // the variance unbiased (n / (n - 1)) as PyTorch keeps it.
  const int64_t n = desc_.mb * desc_.h * desc_.w;
  const float unbias = n > 1 ? static_cast<float>(n) / static_cast<float>(n - 1) : 1.0f;
  backend.axpby(desc_.c, momentum_, mean_.f32(), 1.0f - momentum_, running_mean);
  backend.axpby(desc_.c, momentum_ * unbias, variance_.f32(), 1.0f - momentum_, running_variance);
}

// diff_dst (mb,c,h,w) -> diff_src (mb,c,h,w), diff_scale (c), diff_shift (c)
void BatchNorm::backward(Backend& backend, const std::vector<Tensor>& srcs, const Tensor&,
                         const Tensor& diff_dst, const std::vector<Tensor>& diff_srcs) {
  Tensor diff_src = diff_srcs[0];
  if (!diff_src) {
    // The backend computes diff_src and diff_scale/shift together: a scratch target, once.
    if (!scratch_diff_src_) scratch_diff_src_ = backend.allocate(srcs[0].desc.bytes);
    diff_src = Tensor(scratch_diff_src_.data(), srcs[0].desc);
  }
  op_->backward(srcs[0], diff_dst, params_, mean_.f32(), variance_.f32(), diff_src, grads_,
                grads_ + desc_.c);
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
