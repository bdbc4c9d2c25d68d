// One evaluation pass (see evaluate.h).
#include "train/evaluate.h"

#include <algorithm>
#include <cmath>

namespace ts {
namespace {

int64_t count_correct(const Net& net, const Batch& b) {
  const float* out = net.output();
  const int64_t k = net.output_shape().numel();
  int64_t correct = 0;
  for (int64_t i = 0; i < b.size; ++i) {
    const float* row = out + i * k;
    if (net.is_classifier()) {
      correct += std::max_element(row, row + k) - row == b.labels[i];
    } else {
      bool ok = true;
      for (int64_t j = 0; j < k; ++j) ok = ok && std::fabs(row[j] - b.targets[i * k + j]) < 0.5f;
      correct += ok;
    }
  }
  return correct;
}

}  // namespace

EvalResult evaluate(Net& net, Loader& eval_loader, int64_t train_batch, Communicator& comm) {
  double sums[3] = {0, 0, 0};  // loss * n, correct, n
  Batch b;
  while (eval_loader.next(b)) {
    if (b.size != net.batch()) net.set_batch(b.size);
    const float loss = net.forward(b.images, b.labels, b.targets, Mode::inference);
    sums[0] += static_cast<double>(loss) * static_cast<double>(b.size);
    sums[1] += static_cast<double>(count_correct(net, b));
    sums[2] += static_cast<double>(b.size);
  }
  const int64_t device_used = net.backend().device_memory().used;
  net.set_batch(train_batch);
  comm.allreduce_sum(sums, 3);
  return {sums[0] / std::max(sums[2], 1.0), sums[1] / std::max(sums[2], 1.0), device_used};
}

}  // namespace ts
