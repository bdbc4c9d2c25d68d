// StagedInput (train/staged_input.h): the overlapped input path that devices the host cannot
// address take (batch k+1 staged while step k computes) must train on exactly the batches, in
// exactly the order, of the plain path: the same loss trajectory and final weights, bit for bit,
// for a classifier (labels) and a regression model (targets). On the CPU backend staging is a
// copy, so this checks the pipeline's order and buffers; docs/gpu.md has the device runs.
#include <gtest/gtest.h>

#include <chrono>
#include <cmath>
#include <memory>
#include <thread>
#include <vector>

#include "backend/backend_factory.h"
#include "backend/queue_marks.h"
#include "backend/ref/ref_backend.h"
#include "data/loader.h"
#include "data/synthetic_source.h"
#include "dist/communicator.h"
#include "nn/models.h"
#include "train/loss_ledger.h"
#include "train/run_setup.h"
#include "train/train_step.h"

#include "mpi_test_environment.h"

namespace ts {
namespace {

struct Trajectory {
  std::vector<float> loss;
  std::vector<float> params;
};

Trajectory train(bool staged, const std::string& model, const SampleSource& source, ModelInput input, int steps) {
  auto comm = Communicator::self();
  auto backend = make_backend("cpu");
  backend->set_threads(1);
  auto net = build_model(model, *backend, input, 3);
  net->set_batch(16);
  LoaderOptions lo;
  lo.batch = 16;
  lo.seed = 9;
  lo.prefetch = 3;
  Loader loader(source, lo);
  Sgd sgd(*backend, net->param_count(), {0.9, 0.0, false});
  ExchangeOptions xo;
  xo.overlap = false;
  auto exchange = set_up_exchange(xo, *net, *comm);
  StagedInput staged_input(*net, loader);
  TrainState state{*net, sgd, *exchange, loader, nullptr, staged ? &staged_input : nullptr};
  Trajectory t;
  for (int step = 0; step < steps; ++step) t.loss.push_back(train_step(state, 0.05, true).local_loss);
  t.params.assign(net->params(), net->params() + net->param_count());
  return t;
}

TEST(StagedInput, ClassifierTrainsOnTheSameBatchesAsThePlainPath) {
  const ModelInput in{Shape{1, 8, 8}, 10};
  const auto source = make_synthetic_source({in.sample, 10, 0}, 512, 5);
  const Trajectory plain = train(false, "mlp", *source, in, 12);
  const Trajectory staged = train(true, "mlp", *source, in, 12);
  EXPECT_EQ(plain.loss, staged.loss);
  EXPECT_EQ(plain.params, staged.params);
  EXPECT_NE(plain.loss.front(), plain.loss.back());  // it trained: the comparison is not vacuous
}

TEST(StagedInput, RegressionTrainsOnTheSameTargetsAsThePlainPath) {
  const auto source = make_neuron_source(512, 5);
  const ModelInput in = model_expected_input("neuron");
  const Trajectory plain = train(false, "neuron", *source, in, 12);
  const Trajectory staged = train(true, "neuron", *source, in, 12);
  EXPECT_EQ(plain.loss, staged.loss);
  EXPECT_EQ(plain.params, staged.params);
  EXPECT_NE(plain.loss.front(), plain.loss.back());
}

// Counts the gradient ranges backward has handed over this step; the rest is the real strategy.
// With combine_on_device it stands for nccl's deferred verdicts (dist/cuda/nccl_sync_strategy.h)
// on one rank of a host backend: it takes the loss where forward wrote it, hands the real
// strategy a stand-in, and keeps each step's "mean" (that loss times its weight, read at
// finish_step: one rank) and a made-up communication time (id ms) until combined() reads them;
// the mean of step `poisoned` is NaN (as if another rank's loss were).
class RangeCountingExchange final : public ExchangeStrategy, public DeviceLossCombiner {
 public:
  explicit RangeCountingExchange(std::unique_ptr<ExchangeStrategy> inner) : inner_(std::move(inner)) {}
  const char* name() const override { return inner_->name(); }
  ArenaTransport transport() const override { return inner_->transport(); }
  bool times_ps_phases() const override { return inner_->times_ps_phases(); }
  void broadcast_model() override { inner_->broadcast_model(); }
  void begin_step(LocalLoss local_loss, RangeUpdate update) override {
    ranges = 0;
    EXPECT_EQ(local_loss.on_device(), combine_on_device) << "the loss on the device exactly when combined there";
    device_loss = local_loss.device_loss();
    weight = local_loss.weight();
    inner_->begin_step(local_loss.on_device() ? LocalLoss(0.0f) : std::move(local_loss), std::move(update));
  }
  void gradients_ready(int64_t offset, int64_t count) override {
    ++ranges;
    inner_->gradients_ready(offset, count);
  }
  StepVerdict finish_step(bool average_weights) override {
    StepVerdict v = inner_->finish_step(average_weights);
    if (!combine_on_device) return v;
    const auto id = static_cast<int64_t>(means.size()) + 1;
    means.push_back(id == poisoned ? std::nanf("") : *device_loss * weight);
    v.loss = std::nan("");
    v.combined_id = id;
    return v;
  }
  bool combines_losses() const override { return pretend_combining || combine_on_device || inner_->combines_losses(); }
  int64_t combined_capacity() const override { return 4; }
  CombinedStep combined(int64_t id) override {
    reads.push_back(id);
    return {means.at(static_cast<size_t>(id - 1)), 1e-3 * static_cast<double>(id)};
  }
  void average_state() override { inner_->average_state(); }
  const std::vector<Bucket>& buckets() const override { return inner_->buckets(); }
  // What the trainer's set-up would find: the combiner only with combine_on_device.
  DeviceLossCombiner* device_losses() { return combine_on_device ? this : nullptr; }
  int ranges = 0;
  bool pretend_combining = false;  // stands for a multi-rank exchange that combines on the host
  bool combine_on_device = false;
  int64_t poisoned = -1;
  const float* device_loss = nullptr;
  float weight = 1.0f;
  std::vector<float> means;
  std::vector<int64_t> reads;

 private:
  std::unique_ptr<ExchangeStrategy> inner_;
};

// An mlp on synthetic data training through StagedInput on one rank over `backend`, its sync
// exchange seen through RangeCountingExchange.
struct StagedMlp {
  static LoaderOptions loader_options() {
    LoaderOptions lo;
    lo.batch = 16;
    lo.seed = 9;
    return lo;
  }
  static ExchangeOptions exchange_options() {
    ExchangeOptions xo;
    xo.overlap = false;
    return xo;
  }
  explicit StagedMlp(Backend& backend)
      : source(make_synthetic_source({in.sample, 10, 0}, 256, 5)),
        comm(Communicator::self()),
        net(build_model("mlp", backend, in, 3)),
        loader(*source, loader_options()),
        sgd(backend, net->param_count(), {0.9, 0.0, false}),
        exchange(set_up_exchange(exchange_options(), *net, *comm)),
        staged(*net, loader),
        state{*net, sgd, exchange, loader, nullptr, &staged} {
    net->set_batch(16);
  }
  const ModelInput in{Shape{1, 8, 8}, 10};
  std::unique_ptr<SampleSource> source;
  std::unique_ptr<Communicator> comm;
  std::unique_ptr<Net> net;
  Loader loader;
  Sgd sgd;
  RangeCountingExchange exchange;
  StagedInput staged;
  TrainState state;
};

// A device stand-in whose queued work is done only when the host waits for it: each synchronize
// takes 30 ms. A staged rank of a heterogeneous run (TrainState::wait_for_device) waits once more
// per step, after backward, so its compute time holds that work; without the wait it would hold
// only the time to queue backward.
class PendingWorkBackend final : public RefBackend {
 public:
  void synchronize() override {
    ++waits;
    std::this_thread::sleep_for(std::chrono::milliseconds(30));
    RefBackend::synchronize();
  }
  int waits = 0;
};

TEST(StagedInput, AHeterogeneousDeviceRankWaitsForItsDeviceAfterBackward) {
  PendingWorkBackend backend;
  StagedMlp rig(backend);
  TrainState& state = rig.state;
  for (int step = 0; step < 2; ++step) train_step(state, 0.05, true);  // the pipeline filled
  backend.waits = 0;
  train_step(state, 0.05, true);
  const int plain_waits = backend.waits;
  state.wait_for_device = true;
  backend.waits = 0;
  const StepResult res = train_step(state, 0.05, true);
  EXPECT_EQ(backend.waits, plain_waits + 1);
  EXPECT_GE(res.compute, 0.030) << "the wait after backward is inside the step's compute time";
}

// A device stand-in that tells a drain of its queue (copy_to_host, synchronize: the host waits
// for everything queued) from a wait for a mark (the queued loss copy, a buffer's last reader),
// and records the exchange's view of backward at each such wait.
class QueueWatchingBackend final : public RefBackend, public QueueMarks {
 public:
  void copy_to_host(void* host_dst, const void* device_src, size_t bytes) override {
    ++drains;
    RefBackend::copy_to_host(host_dst, device_src, bytes);
  }
  void synchronize() override {
    ++drains;
    RefBackend::synchronize();
  }
  void queue_copy_to_host(void* host_dst, const void* device_src, size_t bytes) override {
    RefBackend::copy_to_host(host_dst, device_src, bytes);  // queued behind compute: no drain
  }
  int64_t mark() override { return ++marks; }
  void wait_for_mark(int64_t m) override { waits.push_back({m, *ranges_queued}); }
  // The waits for marks made after `since` (this step's own work).
  std::vector<int> ranges_at_waits_after(int64_t since) const {
    std::vector<int> out;
    for (const Wait& w : waits)
      if (w.mark > since) out.push_back(w.ranges);
    return out;
  }
  void forget() {
    drains = 0;
    waits.clear();
  }
  struct Wait {
    int64_t mark;
    int ranges;  // gradient ranges handed to the exchange when the host waited
  };
  int drains = 0;
  int64_t marks = 0;
  const int* ranges_queued = nullptr;
  std::vector<Wait> waits;
};

TEST(StagedInput, AStagedStepQueuesBackwardBeforeItWaitsForTheLoss) {
  QueueWatchingBackend backend;
  StagedMlp rig(backend);
  RangeCountingExchange& exchange = rig.exchange;
  backend.ranges_queued = &exchange.ranges;
  TrainState& state = rig.state;
  train_step(state, 0.05, true);  // the pipeline filled
  backend.forget();
  int64_t before = backend.marks;
  const StepResult res = train_step(state, 0.05, true);
  EXPECT_EQ(backend.drains, 0) << "a plain staged step never empties the device's queue";
  const std::vector<int> own = backend.ranges_at_waits_after(before);
  ASSERT_FALSE(own.empty()) << "the loss is read";
  ASSERT_GT(exchange.ranges, 0);
  for (int at_wait : own) EXPECT_EQ(at_wait, exchange.ranges) << "the loss is read once backward is queued whole";
  for (const auto& w : backend.waits) {
    if (w.mark <= before) EXPECT_LT(w.mark, before) << "an earlier wait is for work at least a step old";
  }
  EXPECT_TRUE(std::isfinite(res.local_loss));
  EXPECT_EQ(res.verdict.loss, res.local_loss) << "the exchange saw the loss read late";

  // cuda.sync_phases and heterogeneous device ranks: the loss is read right after forward, and
  // the device is waited for after backward, so the phases are the device's.
  state.wait_for_device = true;
  backend.forget();
  exchange.ranges = 0;  // (begin_step resets it, after the read)
  before = backend.marks;
  train_step(state, 0.05, true);
  EXPECT_EQ(backend.drains, 1);
  const std::vector<int> read = backend.ranges_at_waits_after(before);
  ASSERT_FALSE(read.empty());
  EXPECT_EQ(read.front(), 0) << "read before backward";
}

// loss_reads: log. The step waits for none of its own work (its loss stays in the net's host
// slots), and the losses read later are those a step that reads them gets, on the same weights.
TEST(StagedInput, AStepThatDefersItsLossWaitsForNothingItQueuedAndLosesNoLoss) {
  QueueWatchingBackend backend;
  StagedMlp deferred(backend);
  backend.ranges_queued = &deferred.exchange.ranges;
  deferred.state.defer_loss = true;
  std::vector<int64_t> ids;
  for (int step = 0; step < 6; ++step) {
    const int64_t before = backend.marks;
    backend.forget();
    const StepResult res = train_step(deferred.state, 0.05, true);
    EXPECT_EQ(backend.drains, 0) << "step " << step;
    EXPECT_TRUE(backend.ranges_at_waits_after(before).empty()) << "step " << step << " waited for its own work";
    EXPECT_TRUE(std::isnan(res.local_loss)) << "unread: the trainer reads it by id";
    ids.push_back(res.loss_id);
  }
  RefBackend plain_backend;
  StagedMlp reading(plain_backend);
  for (size_t i = 0; i < ids.size(); ++i) {
    const StepResult res = train_step(reading.state, 0.05, true);
    EXPECT_EQ(deferred.net->loss_of(ids[i]), res.local_loss) << "step " << i;
  }
  EXPECT_EQ(std::vector<float>(deferred.net->params(), deferred.net->params() + deferred.net->param_count()),
            std::vector<float>(reading.net->params(), reading.net->params() + reading.net->param_count()));
}

// loss_reads: log with an exchange that combines the losses on the device (nccl). The step waits
// for none of its own work and hands the exchange the loss where forward wrote it; the ledger
// reads each step's loss from the net and its mean and communication time from the exchange, at
// least every combined_capacity() steps, and judges divergence by the mean.
TEST(StagedInput, AStepWhoseExchangeCombinesOnTheDeviceLeavesTheMeanToTheLedger) {
  QueueWatchingBackend backend;
  StagedMlp rig(backend);
  RangeCountingExchange& exchange = rig.exchange;
  backend.ranges_queued = &exchange.ranges;
  exchange.combine_on_device = true;
  exchange.poisoned = 6;
  rig.state.defer_loss = true;
  LossLedger ledger(*rig.net, exchange.device_losses());
  RunRecording rec;
  std::vector<LossLedger::Nonfinite> settled;
  for (int64_t step = 1; step <= 7; ++step) {
    const int64_t before = backend.marks;
    backend.forget();
    const StepResult res = train_step(rig.state, 0.05, true);
    EXPECT_EQ(backend.drains, 0) << "step " << step;
    EXPECT_TRUE(backend.ranges_at_waits_after(before).empty()) << "step " << step << " waited for its own work";
    EXPECT_EQ(exchange.device_loss, rig.net->device_loss()) << "where forward wrote the loss";
    EXPECT_EQ(res.verdict.combined_id, step);
    rec.step.push_back(step);
    rec.local_loss.push_back(res.local_loss);
    for (auto& phase : rec.seconds) phase.push_back(0.0f);
    ledger.hold(rec.local_loss.size() - 1, res.loss_id, res.verdict.combined_id);
    if (ledger.full() || step == 7) settled.push_back(ledger.settle(rec));
  }
  EXPECT_EQ(exchange.reads, (std::vector<int64_t>{1, 2, 3, 4, 5, 6, 7})) << "full after 4 (the exchange's capacity)";
  ASSERT_EQ(settled.size(), 2u);
  EXPECT_EQ(settled[0].record, -1);
  EXPECT_EQ(settled[1].record, 5) << "step 6's mean is NaN, its own loss is not";
  EXPECT_TRUE(settled[1].combined && std::isnan(settled[1].loss));
  for (size_t i = 0; i < 7; ++i) {
    EXPECT_EQ(rec.local_loss[i], rig.net->loss_of(static_cast<int64_t>(i) + 1)) << "this rank's own loss, step " << i + 1;
    EXPECT_TRUE(std::isfinite(rec.local_loss[i]));
    EXPECT_FLOAT_EQ(rec.seconds[static_cast<size_t>(Phase::comm)][i], 1e-3f * static_cast<float>(i + 1));
  }
  EXPECT_TRUE(ledger.last_combined());
  EXPECT_EQ(ledger.last_loss(), exchange.means.back()) << "the progress line shows the mean";
}

// loss_reads unset reads every step except on a staged device rank whose exchange does not
// combine losses and that does not wait for its device anyway; `log` where the step needs the
// loss is a configuration error; an exchange that combines on the device takes `log` when asked.
TEST(StagedInput, LossReadsResolveToLogOnlyWhereNothingInTheStepNeedsTheLoss) {
  RefBackend backend;
  StagedMlp rig(backend);
  RangeCountingExchange& one_rank = rig.exchange;
  auto resolve = [&one_rank](LossReads asked, bool staged_device, bool waits_for_device) {
    return resolve_loss_reads(asked, staged_device, waits_for_device, one_rank, one_rank.device_losses());
  };
  EXPECT_EQ(resolve(LossReads::auto_, true, false), LossReads::log);
  EXPECT_EQ(resolve(LossReads::auto_, false, false), LossReads::step) << "host backend";
  EXPECT_EQ(resolve(LossReads::auto_, true, true), LossReads::step) << "waits anyway";
  EXPECT_EQ(resolve(LossReads::log, false, false), LossReads::log) << "asked for (tests, CPU)";
  EXPECT_THROW(resolve(LossReads::log, true, true), ConfigError);
  one_rank.pretend_combining = true;
  EXPECT_EQ(resolve(LossReads::auto_, true, false), LossReads::step);
  try {
    resolve(LossReads::log, true, false);
    ADD_FAILURE() << "log with an exchange that combines the losses";
  } catch (const ConfigError& e) {
    EXPECT_NE(std::string(e.what()).find("combines the losses on the host every step"), std::string::npos)
        << e.what();
  }
  one_rank.pretend_combining = false;
  one_rank.combine_on_device = true;
  EXPECT_EQ(resolve(LossReads::auto_, true, false), LossReads::step) << "nccl: step unless asked";
  EXPECT_EQ(resolve(LossReads::log, true, false), LossReads::log);
  EXPECT_THROW(resolve(LossReads::log, true, true), ConfigError);
}

}  // namespace
}  // namespace ts
