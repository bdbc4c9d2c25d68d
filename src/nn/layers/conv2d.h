// 2-D convolution layer: stride, padding, groups, optional bias.
// src (mb,ic,ih,iw), wei (oc,ic/g,kh,kw), bia (oc) -> dst (mb,oc,oh,ow).
#pragma once

#include <memory>

#include "nn/layer.h"

namespace ts {

struct Conv2dOptions {
  int64_t out_channels = 1;
  int64_t kh = 1, kw = 1;
  int64_t sh = 1, sw = 1;
  int64_t ph = 0, pw = 0;
  int64_t groups = 1;
  bool bias = true;
  Init init = Init::he;  // He when a ReLU follows (possibly after BN), Xavier otherwise
};

class Conv2d : public Layer {
 public:
  Conv2d(std::string name, Conv2dOptions options);
  // Square kernel/stride/padding shorthand.
  Conv2d(std::string name, int64_t out_channels, int64_t kernel, int64_t stride = 1,
         int64_t padding = 0, bool bias = true, Init init = Init::he);
  std::string kind() const override { return "conv"; }
  TS_LAYER_OVERRIDES;
  int64_t param_count() const override;
  void init(Rng& rng, float* params, float* state) override;
  bool fuse_relu() override;
  const ConvDesc& desc() const { return desc_; }

 private:
  Conv2dOptions options_;
  ConvDesc desc_;
  std::unique_ptr<ConvOp> op_;  // planned per minibatch
};

}  // namespace ts
