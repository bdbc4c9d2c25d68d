// ReLU6 layer: dst = min(max(src, 0), 6), the bounded activation of MobileNetV2.
#pragma once

#include "nn/layers/activation.h"

namespace ts {

class Relu6 : public Activation {
 public:
  explicit Relu6(std::string name) : Activation(std::move(name), EltwiseKind::relu6) {}
};

}  // namespace ts
