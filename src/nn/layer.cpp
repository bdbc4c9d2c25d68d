// Layer base helpers: weight initialisation and error messages.
#include "nn/layer.h"

#include <cmath>

#include "core/error.h"

namespace ts {

void init_fill(Init init, Rng& rng, int64_t fan_in, int64_t fan_out, float* wei, int64_t count) {
  if (init == Init::he) {
    double std_dev = std::sqrt(2.0 / static_cast<double>(fan_in));
    for (int64_t i = 0; i < count; ++i) wei[i] = static_cast<float>(rng.normal() * std_dev);
  } else {
    double limit = std::sqrt(6.0 / static_cast<double>(fan_in + fan_out));
    for (int64_t i = 0; i < count; ++i)
      wei[i] = static_cast<float>((2.0 * rng.uniform() - 1.0) * limit);
  }
}

LayerInfo Layer::info() const {
  LayerInfo row;
  row.name = name_;
  row.kind = kind();
  row.parameters = param_count();
  return row;
}

void Layer::fail(const std::string& what) const {
  throw ConfigError("layer " + name_ + " (" + kind() + "): " + what);
}

void Layer::expect_inputs(const std::vector<Shape>& src_shapes, size_t count) const {
  if (src_shapes.size() != count)
    fail("expects " + std::to_string(count) + " input(s), got " +
         std::to_string(src_shapes.size()));
}

void LossLayer::forward(Backend&, const std::vector<Tensor>&, const Tensor&, Mode) {
  fail("a loss layer runs through forward_loss, not forward");
}

void LossLayer::backward(Backend&, const std::vector<Tensor>&, const Tensor&, const Tensor&,
                         const std::vector<Tensor>&) {
  fail("a loss layer runs through backward_loss, not backward");
}

}  // namespace ts
