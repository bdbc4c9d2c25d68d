// train-internal: the optimizer of an async_ps server (train/ps_server_loop.h): SGD with
// momentum, weight decay and Nesterov over one shard, where each push carries one worker's share
// of a global step. A push adds its share to the velocity and moves the weights by it; the
// momentum decays once per global step, at the step's first push (the decay's move of the
// weights included). With S = 0 a round of pushes is then exactly one synchronous step with
// momentum (up to the order of summation; weight decay reads the weights after the earlier
// pushes of the round, a second-order difference):
//   sync:      v = mu v + mean(g');                 w -= lr v
//   per step:  w -= lr mu v;  v = mu v              (first push of the step)
//   per push:  v += g'_i / N; w -= lr g'_i / N      (g'_i = g_i + wd w)
// Nesterov (w -= lr (g' + mu v)): the decay moves the weights by lr mu^2 v, a push by
// lr (1 + mu) g'_i / N. Decaying per push instead (mu applied N times a step, on gradients
// computed before the round's earlier pushes) was far less stable: with 2 workers and mu 0.9 a
// quadratic step diverged for lr * h > 0.43, sync's for lr * h > 3.8 (docs/async.md).
#pragma once

#include <cstdint>
#include <vector>

#include "nn/optimizer.h"

namespace ts {

class PushSgd {
 public:
  // `count` weights of the shard; `workers`: pushes per global step.
  PushSgd(int64_t count, const SgdOptions& options, int workers);

  // One push: `gradient` (count floats) of a worker's step at learning rate `lr`;
  // `first_of_step`: the server applied no push of this step or a later one before.
  void apply(float* weights, const float* gradient, double lr, bool first_of_step);
  float* velocity() { return velocity_.data(); }  // count floats (checkpoints)

 private:
  SgdOptions options_;
  float share_;  // 1 / workers
  std::vector<float> velocity_;
};

}  // namespace ts
