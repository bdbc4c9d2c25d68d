// Batch normalisation per channel over (mb, h, w). Params: scale (c), shift (c); state: running
// mean (c), running variance (c). Train: batch statistics, and running = 0.9 running + 0.1 batch
// (the running variance uses the unbiased batch variance, n/(n-1)). Inference: running stats.
// src (mb,c,h,w) or (mb,c) -> dst of the same shape.
#pragma once

#include <memory>

#include "nn/layer.h"

namespace ts {

class BatchNorm : public Layer {
 public:
  explicit BatchNorm(std::string name, float eps = 1e-5f, float momentum = 0.1f);
  std::string kind() const override { return "bn"; }
  TS_LAYER_OVERRIDES;
  int64_t param_count() const override { return 2 * desc_.c; }
  int64_t state_count() const override { return 2 * desc_.c; }
  void init(Rng& rng, float* params, float* state) override;
  bool fuse_relu() override;

  // Views of the bound state (device memory): running mean (c) then running variance (c).
  const float* running_mean() const { return state_; }
  const float* running_variance() const { return state_ + desc_.c; }

 private:
  BnDesc desc_;
  float momentum_;
  std::unique_ptr<BatchNormOp> op_;  // planned per minibatch
  DeviceBuffer mean_, variance_;     // batch statistics of the last training forward (c each)
  DeviceBuffer scratch_diff_src_;    // diff_src when the input needs no gradient (src's desc)
};

}  // namespace ts
