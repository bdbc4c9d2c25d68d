// Channel concatenation: srcs[i] (mb, c_i, h, w) -> dst (mb, sum c_i, h, w) (Inception blocks).
// Inputs of rank 1 (features) concatenate along the feature axis.
#pragma once

#include "nn/layer.h"

namespace ts {

class Concat : public Layer {
 public:
  explicit Concat(std::string name) : Layer(std::move(name)) {}
  std::string kind() const override { return "concat"; }
  Shape setup(const std::vector<Shape>& src_shapes) override;
  void set_batch(int64_t mb) override;
  void forward(Backend& backend, const std::vector<const float*>& srcs, float* dst,
               Mode mode) override;
  void backward(Backend& backend, const std::vector<const float*>& srcs, const float* dst,
                const float* diff_dst, const std::vector<float*>& diff_srcs) override;
  LayerInfo info() const override;

 private:
  std::vector<int64_t> channels_;
  int64_t hw_ = 1;
  std::vector<float*> scratch_ptrs_;
  std::vector<std::vector<float>> scratch_;  // split targets for inputs that need no gradient
};

}  // namespace ts
