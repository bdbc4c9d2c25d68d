// One training step (see train_step.h).
#include "train/train_step.h"

#include "core/timer.h"

namespace ts {

StepResult train_step(TrainState& st, double lr, bool average_weights) {
  StepResult out;
  PhaseSeconds& s = out.seconds;
  const double t0 = now_seconds();
  Batch b;
  st.loader.next(b);
  at(s, Phase::data_wait) = st.loader.last_wait_seconds();
  const double t1 = now_seconds();
  out.local_loss = st.net.forward(b.images, b.labels, b.targets, Mode::train);
  const double t2 = now_seconds();
  // Backward hands each layer's finished gradients to the exchange, which reduces them in
  // buckets (overlapped with the rest of backward when it has a communication thread). The
  // exchange keeps the update until it applies it: lr by value.
  Net& net = st.net;
  Sgd& sgd = st.sgd;
  st.exchange.begin_step(out.local_loss, [&net, &sgd, lr](int64_t offset, int64_t count) {
    sgd.step_range(net.params(), net.grads(), lr, offset, count);
  });
  ExchangeStrategy& exchange = st.exchange;
  net.backward([&exchange](ParamRange range) { exchange.gradients_ready(range.offset, range.count); });
  const double t3 = now_seconds();
  out.verdict = st.exchange.finish_step(average_weights);
  const double t4 = now_seconds();
  ++st.step;

  const ExchangeTimes& x = out.verdict.times;
  at(s, Phase::forward) = t2 - t1;
  at(s, Phase::backward) = t3 - t2;
  at(s, Phase::comm) = x.comm;
  at(s, Phase::comm_wait) = x.comm_wait;
  at(s, Phase::optimizer) = x.optimizer;
  at(s, Phase::step) = t4 - t0;
  at(s, Phase::gather) = x.gather;
  at(s, Phase::average) = x.average;
  at(s, Phase::broadcast) = x.broadcast;
  return out;
}

}  // namespace ts
