// Inverted dropout: in training, each element is kept with probability 1-p and scaled by
// 1/(1-p); the mask comes from the layer's own seeded Rng. Identity in inference.
// src (mb, ...) -> dst (mb, ...) of the same shape.
#pragma once

#include <memory>
#include <vector>

#include "nn/layer.h"

namespace ts {

class Dropout : public Layer {
 public:
  Dropout(std::string name, double p);
  std::string kind() const override { return "dropout"; }
  TS_LAYER_OVERRIDES;
  void init(Rng& rng, float* params, float* state) override;
  const uint8_t* mask() const { return mask_.data(); }
  std::vector<uint64_t> rng_state() const override;
  void set_rng_state(const std::vector<uint64_t>& words) override;

 private:
  double p_;
  Rng rng_{1};
  std::unique_ptr<DropoutOp> op_;  // planned per minibatch
  std::vector<uint8_t> mask_;      // (mb, ...) 0/1 of the last training forward, drawn on the host
  DeviceBuffer device_mask_;       // its copy on the device
  bool device_mask_ones_ = false;  // the device mask is all ones (inference), nothing to copy
  float last_scale_ = 1.0f;        // of the last forward: 1/(1-p) in training, 1 in inference
};

}  // namespace ts
