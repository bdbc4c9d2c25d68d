// Element-wise activation layers (ReLU, ReLU6, sigmoid) over the whole tensor.
// src (mb, ...) -> dst (mb, ...) of the same shape.
#pragma once

#include <memory>

#include "nn/layer.h"

namespace ts {

class Activation : public Layer {
 public:
  Activation(std::string name, EltwiseKind kind);
  std::string kind() const override { return eltwise_kind_name(desc_.kind); }
  TS_LAYER_OVERRIDES;

 private:
  EltwiseDesc desc_;
  std::unique_ptr<EltwiseOp> op_;  // planned per minibatch
};

// dst = max(src, 0)
class Relu : public Activation {
 public:
  explicit Relu(std::string name) : Activation(std::move(name), EltwiseKind::relu) {}
};

// dst = min(max(src, 0), 6), the bounded activation of MobileNetV2
class Relu6 : public Activation {
 public:
  explicit Relu6(std::string name) : Activation(std::move(name), EltwiseKind::relu6) {}
};

// dst = 1 / (1 + exp(-src)), the logistic sigmoid
class Sigmoid : public Activation {
 public:
  explicit Sigmoid(std::string name) : Activation(std::move(name), EltwiseKind::sigmoid) {}
};

}  // namespace ts
