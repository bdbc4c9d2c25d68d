// Batch normalisation per channel over (mb, h, w). Params: scale (c), shift (c); state: running
// mean (c), running variance (c). Train: batch statistics, and running = 0.9 running + 0.1 batch
// (the running variance uses the unbiased batch variance, n/(n-1)). Inference: running stats.
// src (mb,c,h,w) or (mb,c) -> dst of the same shape.
#pragma once

#include "core/buffer.h"
#include "nn/layer.h"

namespace ts {

class BatchNorm : public Layer {
 public:
  explicit BatchNorm(std::string name, float eps = 1e-5f, float momentum = 0.1f);
  std::string kind() const override { return "bn"; }
  Shape setup(const std::vector<Shape>& src_shapes) override;
  int64_t param_count() const override { return 2 * desc_.c; }
  int64_t state_count() const override { return 2 * desc_.c; }
  void init(Rng& rng) override;
  void set_batch(int64_t mb) override;
  void forward(Backend& backend, const std::vector<const float*>& srcs, float* dst,
               Mode mode) override;
  void backward(Backend& backend, const std::vector<const float*>& srcs, const float* dst,
                const float* diff_dst, const std::vector<float*>& diff_srcs) override;
  LayerInfo info() const override;
  bool fuse_relu() override;

  // Views of the bound state: running mean (c) then running variance (c).
  const float* running_mean() const { return state_; }
  const float* running_variance() const { return state_ + desc_.c; }

 private:
  BnDesc desc_;
  float momentum_;
  Buffer<float> mean_, variance_;  // batch statistics of the last training forward (c each)
  Buffer<float> scratch_diff_src_;  // diff_src when the input needs no gradient (mb,c,h,w)
};

}  // namespace ts
