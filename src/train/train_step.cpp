// One training step (see train_step.h).
#include "train/train_step.h"

#include <chrono>
#include <limits>
#include <thread>

#include "core/error.h"
#include "core/timer.h"

namespace ts {
namespace {

// The optimizer update the exchange applies: plain SGD, or with loss scaling, unscale the
// gradients and check them for an overflow first (a non-finite step is skipped).
RangeUpdate make_update(TrainState& st, double lr, StepResult& out) {
  Net& net = st.net;
  Sgd& sgd = st.sgd;
  LossScaler* scaler = st.scaler;
  if (!scaler)
    return [&net, &sgd, lr](int64_t offset, int64_t count) { sgd.step_range(net.params(), net.grads(), lr, offset, count); };
  if (scaler->on_device())  // loss_reads: log: the device decides, the host queues (out.skipped unknown)
    return [&net, &sgd, scaler, lr](int64_t offset, int64_t count) {
      TS_CHECK(offset == 0 && count == net.param_count(), "loss scaling needs the update over all parameters at once");
      DeviceLossScaling& device = scaler->device_ops();
      LossScaleState* state = scaler->device_state();
      device.unscale_check(count, state, net.grads());
      sgd.step_range(net.params(), net.grads(), lr, offset, count, state, &device);
      device.update_loss_scale(state, scaler->rule());
    };
  return [&net, &sgd, scaler, lr, &out](int64_t offset, int64_t count) {
    // The decision covers the whole step: every strategy applies its update over all parameters
    // in one call, so there is nothing to undo.
    TS_CHECK(offset == 0 && count == net.param_count(), "loss scaling needs the update over all parameters at once");
    const bool finite = net.backend().scale_check_finite(count, 1.0f / scaler->scale(), net.grads());
    scaler->update(finite);
    out.skipped = !finite;
    if (finite) sgd.step_range(net.params(), net.grads(), lr, offset, count);
  };
}

// The factor of this rank's gradients and loss under unequal shares: its batch's part of the
// global batch, times world (the exchange then takes the mean over ranks).
float share_weight(const TrainState& st, int64_t batch) {
  if (st.global_batch <= 0) return 1.0f;
  return static_cast<float>(static_cast<double>(batch) * st.world / static_cast<double>(st.global_batch));
}

// The scale of the loss gradient: the loss scaler's, times the share weight (the scaler's
// unscaling leaves the weight in the gradients). A scaler on the device: backward reads it there.
void set_gradient_scale(TrainState& st, float weight) {
  if (st.scaler && st.scaler->on_device())
    st.net.set_loss_scale(weight, &st.scaler->device_state()->scale);
  else if (st.scaler || st.global_batch > 0)
    st.net.set_loss_scale((st.scaler ? st.scaler->scale() : 1.0f) * weight);
}

// dist.emulate_slowdown: this rank takes `slowdown` x its compute time; the seconds slept.
double emulate_slowdown(double slowdown, double compute_seconds) {
  if (slowdown <= 1.0) return 0;
  const double t0 = now_seconds();
  std::this_thread::sleep_for(std::chrono::duration<double>((slowdown - 1.0) * compute_seconds));
  return now_seconds() - t0;
}

// Takes this step's batch: the staged one (prepare plans the net for it), or the loader's next
// into `b`, the net re-planned for its size; the seconds waited for it.
double take_batch(TrainState& st, Batch& b) {
  if (st.staged) return st.staged->prepare();
  st.loader.next(b);
  if (b.size != st.net.batch()) st.net.set_batch(b.size);
  return st.loader.last_wait_seconds();
}

// Takes this step's batch and queues forward on it; `t1` is when forward started. Host
// backends (and a device rank that waits for its device: exact phases) know the loss on return;
// a staged device rank reads it later, once backward is queued too (returns false).
bool forward_on_batch(TrainState& st, StepResult& out, float& weight, double& t1) {
  Batch b;
  at(out.seconds, Phase::data_wait) = take_batch(st, b);
  out.batch = st.net.batch();
  weight = share_weight(st, out.batch);
  set_gradient_scale(st, weight);
  t1 = now_seconds();
  if (!st.staged) {
    out.local_loss = st.net.forward(b.images, b.labels, b.targets, Mode::train);
    return true;
  }
  double data_wait = 0;
  st.staged->forward_queued(Mode::train, data_wait);
  at(out.seconds, Phase::data_wait) += data_wait;
  t1 += data_wait;  // forward: the rest of this part
  if (!st.wait_for_device) return false;
  out.local_loss = st.net.loss();
  return true;
}

}  // namespace

StepResult train_step(TrainState& st, double lr, bool average_weights) {
  StepResult out;
  PhaseSeconds& s = out.seconds;
  const double t0 = now_seconds();
  double t1 = 0;
  float weight = 1.0f;
  const bool loss_known = forward_on_batch(st, out, weight, t1);
  out.loss_id = st.net.last_loss_id();
  out.reads = st.loader.last_read_counts();
  const double t2 = now_seconds();
  // Backward hands each layer's finished gradients to the exchange, which reduces them in
  // buckets (overlapped with the rest of backward when it has a communication thread). The
  // exchange keeps the update until it applies it: lr by value. A loss still on the device is
  // read where the exchange first needs it (its last bucket, or finish_step), or not in this step
  // at all (defer_loss: the exchange's verdict is then the stand-in's, and ignored, or, where it
  // combines the losses on the device, it reads the loss there and the trainer its mean later).
  Net& net = st.net;
  const int64_t id = out.loss_id;
  // (resolve_loss_reads refused defer_loss for an exchange that combines losses on the host)
  if (st.defer_loss && !loss_known) out.local_loss = std::numeric_limits<float>::quiet_NaN();
  const bool read_after_backward = !loss_known && !st.defer_loss;
  LocalLoss loss = !st.defer_loss ? (loss_known ? LocalLoss(out.local_loss * weight)
                                                : LocalLoss([&net, id, weight] { return net.loss_of(id) * weight; }))
                   : st.exchange.combines_losses() ? LocalLoss::on_device(net.device_loss(), weight)
                                                   : LocalLoss(0.0f);
  st.exchange.begin_step(std::move(loss), make_update(st, lr, out));
  ExchangeStrategy& exchange = st.exchange;
  net.backward([&exchange](ParamRange range) { exchange.gradients_ready(range.offset, range.count); });
  // Backward is queued: the host waits for forward's end while the device runs backward. That
  // wait is forward's: /timing's forward ends when the loss is on the host.
  double loss_wait = 0;
  if (read_after_backward) {
    const double w0 = now_seconds();
    out.local_loss = net.loss_of(id);
    loss_wait = now_seconds() - w0;
  }
  if (st.wait_for_device) net.backend().synchronize();
  const double slept = emulate_slowdown(st.slowdown, now_seconds() - t1);
  const double t3 = now_seconds();
  out.compute = t3 - t1;
  out.verdict = st.exchange.finish_step(average_weights);
  const double t4 = now_seconds();
  ++st.step;

  const ExchangeTimes& x = out.verdict.times;
  at(s, Phase::forward) = t2 - t1 + loss_wait;
  at(s, Phase::backward) = t3 - t2 - slept - loss_wait;
  at(s, Phase::comm) = x.comm;
  at(s, Phase::comm_wait) = x.comm_wait;
  at(s, Phase::optimizer) = x.optimizer;
  at(s, Phase::step) = t4 - t0;
  at(s, Phase::gather) = x.gather;
  at(s, Phase::average) = x.average;
  at(s, Phase::broadcast) = x.broadcast;
  at(s, Phase::compress) = x.compress;
  at(s, Phase::decompress) = x.decompress;
  for (const BucketSpan& b : x.buckets) out.buckets.push_back({b.start - t0, b.end - t0});
  return out;
}

}  // namespace ts
