// Per-step momentum of an async_ps server (see push_sgd.h).
#include "train/push_sgd.h"

namespace ts {

PushSgd::PushSgd(int64_t count, const SgdOptions& options, int workers)
    : options_(options), share_(1.0f / static_cast<float>(workers)), velocity_(static_cast<size_t>(count), 0.0f) {}

void PushSgd::apply(float* weights, const float* gradient, double lr_step, bool first_of_step) {
  const int64_t n = static_cast<int64_t>(velocity_.size());
  const float lr = static_cast<float>(lr_step), mu = static_cast<float>(options_.momentum);
  const float wd = static_cast<float>(options_.weight_decay), share = share_;
  const bool nesterov = options_.nesterov;
  float* v = velocity_.data();
  // The decay of the step's momentum: w -= lr mu v (Nesterov: lr mu^2 v), v = mu v.
  const float decay_step = lr * (nesterov ? mu * mu : mu);
  const float push_step = lr * (nesterov ? 1.0f + mu : 1.0f);
#pragma omp parallel for
  for (int64_t i = 0; i < n; ++i) {
    float vi = v[i];
    if (first_of_step && mu != 0.0f) {
      weights[i] -= decay_step * vi;
      vi *= mu;
    }
    const float g = (gradient[i] + wd * weights[i]) * share;
    v[i] = vi + g;
    weights[i] -= push_step * g;
  }
}

}  // namespace ts
