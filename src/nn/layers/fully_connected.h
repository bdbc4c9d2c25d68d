// Fully connected layer; a (C,H,W) input is flattened implicitly (row-major, as NCHW stores it).
// src (mb, ic = C*H*W), wei (oc, ic), bia (oc) -> dst (mb, oc).
#pragma once

#include <memory>

#include "nn/layer.h"

namespace ts {

class FullyConnected : public Layer {
 public:
  FullyConnected(std::string name, int64_t outputs, bool bias = true, Init init = Init::he);
  std::string kind() const override { return "fc"; }
  TS_LAYER_OVERRIDES;
  int64_t param_count() const override;
  void init(Rng& rng, float* params, float* state) override;
  const FcDesc& desc() const { return desc_; }

 private:
  Init init_;
  FcDesc desc_;
  std::unique_ptr<FcOp> op_;  // planned per minibatch
};

}  // namespace ts
