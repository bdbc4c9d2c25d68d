// Logistic sigmoid layer: dst = 1 / (1 + exp(-src)).
#pragma once

#include "nn/layers/activation.h"

namespace ts {

class Sigmoid : public Activation {
 public:
  explicit Sigmoid(std::string name) : Activation(std::move(name), EltwiseKind::sigmoid) {}
};

}  // namespace ts
