// SGD optimizer (see optimizer.h).
#include "nn/optimizer.h"

#include <string>

#include "core/error.h"

namespace ts {

Sgd::Sgd(Backend& backend, int64_t param_count, SgdOptions options)
    : backend_(backend), count_(param_count), options_(options) {
  if (!(options.momentum >= 0.0 && options.momentum < 1.0))
    throw ConfigError("momentum must be in [0, 1), got " + std::to_string(options.momentum));
  if (!(options.weight_decay >= 0.0))
    throw ConfigError("weight_decay must be >= 0, got " + std::to_string(options.weight_decay));
  if (options.nesterov && options.momentum == 0.0)
    throw ConfigError("nesterov needs momentum > 0");
  if (param_count < 0) throw ConfigError("Sgd: negative parameter count");
  velocity_ = backend.allocate(static_cast<size_t>(param_count) * sizeof(float));
}

void Sgd::step_range(float* params, const float* grads, double lr, int64_t offset, int64_t count,
                     const LossScaleState* unless_nonfinite, DeviceLossScaling* scaling) {
  TS_CHECK(offset >= 0 && count >= 0 && offset + count <= count_,
           "Sgd::step_range: [" + std::to_string(offset) + ", " + std::to_string(offset + count) +
               ") is outside the " + std::to_string(count_) + " parameters");
  if (count == 0) return;
  const float rate = static_cast<float>(lr), momentum = static_cast<float>(options_.momentum),
              decay = static_cast<float>(options_.weight_decay);
  if (unless_nonfinite)
    scaling->sgd_step_if_finite(unless_nonfinite, count, rate, momentum, decay, options_.nesterov, params + offset,
                                grads + offset, velocity_.f32() + offset);
  else
    backend_.sgd_step(count, rate, momentum, decay, options_.nesterov, params + offset, grads + offset,
                      velocity_.f32() + offset);
}

}  // namespace ts
