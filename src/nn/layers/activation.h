// Element-wise activation layers (ReLU, sigmoid) over the whole tensor.
// src (mb, ...) -> dst (mb, ...) of the same shape.
#pragma once

#include <memory>

#include "nn/layer.h"

namespace ts {

class Activation : public Layer {
 public:
  Activation(std::string name, EltwiseKind kind);
  std::string kind() const override;
  TS_LAYER_OVERRIDES;

 private:
  EltwiseDesc desc_;
  std::unique_ptr<EltwiseOp> op_;  // planned per minibatch
};

}  // namespace ts
