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
  Shape setup(const std::vector<Shape>& src_shapes) override;
  int64_t param_count() const override;
  void init(Rng& rng, float* params, float* state) override;
  TensorDesc plan(Backend& backend, int64_t mb, const std::vector<TensorDesc>& srcs) override;
  void forward(Backend& backend, const std::vector<Tensor>& srcs, const Tensor& dst,
               Mode mode) override;
  void backward(Backend& backend, const std::vector<Tensor>& srcs, const Tensor& dst,
                const Tensor& diff_dst, const std::vector<Tensor>& diff_srcs) override;
  LayerInfo info() const override;
  const FcDesc& desc() const { return desc_; }

 private:
  Init init_;
  FcDesc desc_;
  std::unique_ptr<FcOp> op_;  // planned per minibatch
};

}  // namespace ts
