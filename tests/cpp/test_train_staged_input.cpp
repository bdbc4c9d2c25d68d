// StagedInput (train/staged_input.h): the overlapped input path that devices the host cannot
// address take (batch k+1 staged while step k computes) must train on exactly the batches, in
// exactly the order, of the plain path: the same loss trajectory and final weights, bit for bit,
// for a classifier (labels) and a regression model (targets). On the CPU backend staging is a
// copy, so this checks the pipeline's order and buffers; docs/gpu.md has the device runs.
#include <gtest/gtest.h>

#include <chrono>
#include <thread>
#include <vector>

#include "backend/backend_factory.h"
#include "backend/ref/ref_backend.h"
#include "data/loader.h"
#include "data/synthetic_source.h"
#include "dist/communicator.h"
#include "nn/models.h"
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
  const ModelInput in{Shape{1, 8, 8}, 10};
  const auto source = make_synthetic_source({in.sample, 10, 0}, 256, 5);
  auto comm = Communicator::self();
  PendingWorkBackend backend;
  auto net = build_model("mlp", backend, in, 3);
  net->set_batch(16);
  LoaderOptions lo;
  lo.batch = 16;
  lo.seed = 9;
  Loader loader(*source, lo);
  Sgd sgd(backend, net->param_count(), {0.9, 0.0, false});
  ExchangeOptions xo;
  xo.overlap = false;
  auto exchange = set_up_exchange(xo, *net, *comm);
  StagedInput staged_input(*net, loader);
  TrainState state{*net, sgd, *exchange, loader, nullptr, &staged_input};
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

}  // namespace
}  // namespace ts
