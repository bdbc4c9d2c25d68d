// ReLU layer: dst = max(src, 0).
#pragma once

#include "nn/layers/activation.h"

namespace ts {

class Relu : public Activation {
 public:
  explicit Relu(std::string name) : Activation(std::move(name), EltwiseKind::relu) {}
};

}  // namespace ts
