// Channel concatenation: srcs[i] (mb, c_i, h, w) -> dst (mb, sum c_i, h, w) (Inception blocks).
// Inputs of rank 1 (features) concatenate along the feature axis.
#pragma once

#include <memory>

#include "nn/layer.h"

namespace ts {

class Concat : public Layer {
 public:
  explicit Concat(std::string name) : Layer(std::move(name)) {}
  std::string kind() const override { return "concat"; }
  TS_LAYER_OVERRIDES;

 private:
  std::vector<int64_t> channels_;
  int64_t hw_ = 1;
  std::unique_ptr<ConcatOp> op_;  // planned per minibatch
};

}  // namespace ts
