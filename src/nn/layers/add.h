// Element-wise sum of two or more inputs of the same shape (residual connections).
// srcs[i] (mb, ...) -> dst (mb, ...); each diff_src is a copy of diff_dst.
#pragma once

#include <memory>
#include <vector>

#include "nn/layer.h"

namespace ts {

class Add : public Layer {
 public:
  explicit Add(std::string name) : Layer(std::move(name)) {}
  std::string kind() const override { return "add"; }
  TS_LAYER_OVERRIDES;
  bool fuse_relu() override;  // two inputs only: dst = relu(a + b)

 private:
  bool relu_ = false;
  std::vector<std::unique_ptr<AddOp>> ops_;  // dst = src0 + src1 [relu], then dst += src_i
};

}  // namespace ts
