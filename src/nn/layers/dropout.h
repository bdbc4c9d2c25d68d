// Inverted dropout: in training, each element is kept with probability 1-p and scaled by
// 1/(1-p); the mask comes from the layer's own seeded Rng. Identity in inference.
// src (mb, ...) -> dst (mb, ...) of the same shape.
#pragma once

#include "core/buffer.h"
#include "nn/layer.h"

namespace ts {

class Dropout : public Layer {
 public:
  Dropout(std::string name, double p);
  std::string kind() const override { return "dropout"; }
  Shape setup(const std::vector<Shape>& src_shapes) override;
  void init(Rng& rng) override;
  void set_batch(int64_t mb) override;
  void forward(Backend& backend, const std::vector<const float*>& srcs, float* dst,
               Mode mode) override;
  void backward(Backend& backend, const std::vector<const float*>& srcs, const float* dst,
                const float* diff_dst, const std::vector<float*>& diff_srcs) override;
  LayerInfo info() const override;
  const uint8_t* mask() const { return mask_.data(); }

 private:
  double p_;
  Rng rng_{1};
  Buffer<uint8_t> mask_;  // (mb, ...) 0/1 of the last training forward
  bool last_inference_ = false;
};

}  // namespace ts
