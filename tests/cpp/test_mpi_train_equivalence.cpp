// Data-parallel equivalence under mpiexec (2, 3 and 4 ranks), stepping Net + Loader + Sgd + the
// exchange strategy with the trainer's own train_step (train/train_step.h) and the trainer's
// exchange set-up (train/run_setup.h: with shm, the gradient arena in node shared memory):
//   - sync: N ranks x batch b follow the loss trajectory and reach the weights of 1 rank x
//     batch N*b (every all-reduce algorithm, overlap on and off, many small buckets, momentum
//     and weight decay), within float tolerance (only the summation order differs);
//   - weight_avg with period 1 and plain SGD matches the same 1-rank run;
//   - weight_avg with period k matches a naive local-SGD reference: N nets in one process,
//     each on its rank's data with its own velocity, weights averaged every k steps;
//   - unequal shares of the global batch (docs/heterogeneous.md): ranks
//     with shares 3b, b, b, ... (gradients weighted by share), changed to other shares during the
//     run as `adaptive` does, follow 1 rank with the whole global batch;
//   - the strategies themselves: bucket means, the folded loss, a divergence seen on one rank only.
// The 1-rank references run on every rank with Communicator::self() (world size 1 takes the
// same code path). The network has no batch norm (BN statistics are per worker).
#include <gtest/gtest.h>

#include <algorithm>
#include <atomic>
#include <cmath>
#include <cstring>
#include <functional>
#include <memory>
#include <limits>
#include <numeric>
#include <string>
#include <thread>
#include <vector>

#include "backend/backend.h"
#include "backend/backend_factory.h"
#include "core/error.h"
#include "data/loader.h"
#include "data/synthetic_source.h"
#include "dist/allreduce.h"
#include "dist/batch_partition.h"
#include "dist/bucket_pipeline.h"
#include "dist/communicator.h"
#include "dist/exchange_strategy.h"
#include "nn/models.h"
#include "nn/net.h"
#include "nn/optimizer.h"
#include "train/run_setup.h"
#include "train/share_balancer.h"
#include "train/staged_input.h"
#include "train/train_step.h"

#include "mpi_test_environment.h"

using namespace ts;

namespace {

struct DpSetup {
  DistStrategy strategy = DistStrategy::sync;
  AllreduceAlgorithm algorithm = AllreduceAlgorithm::mpi;
  bool overlap = true;
  // The mlp below has 50826 parameters: 5 buckets (the last, staged one holds the first
  // 12007), whose edges fall inside layers. (Few
  // collectives per step: MPICH busy-polls, which is slow on oversubscribed cores.)
  int64_t bucket_elements = 12007;
  int64_t period = 1;
  int64_t batch = 8;               // per rank
  int64_t steps = 6;
  double lr = 0.05, momentum = 0.9, weight_decay = 1e-3;
  // Unequal shares (one per rank; empty: `batch` each), and new shares from the batch after
  // step `change_after` + prefetch + 1 on (0: no change).
  std::vector<int64_t> shares, new_shares;
  int64_t change_after = 0;
  // Shares decided by the trainer's ShareBalancer (dist.partition measured, 2 calibration
  // steps, quantum 8) from compute times the test gives: rank 0 takes 3x as long per sample.
  bool balance = false;
  int staged_rank = -1;  // this rank stages its input as a CUDA rank does (StagedInput)
};

struct Trajectory {
  std::vector<double> loss;    // mean over ranks per step
  std::vector<double> folded;  // the exchange's own mean loss (where it exchanged)
  std::vector<float> params;   // final weights
};

const SampleSource& data() {
  static const auto source = make_synthetic_source({Shape{1, 8, 8}, 10, 0}, 4096, 7);
  return *source;
}

ModelInput input() { return {Shape{1, 8, 8}, 10}; }

// Trains the mlp for s.steps steps over `comm` with train_step.
Trajectory run(Communicator& comm, const DpSetup& s) {
  auto backend = make_backend("cpu");
  backend->set_threads(1);
  auto net = build_model("mlp", *backend, input(), 3);
  LoaderOptions lo;
  lo.batch = s.batch;
  lo.seed = 11;
  lo.rank = comm.rank();
  lo.world = comm.size();
  const size_t me = static_cast<size_t>(comm.rank());
  if (!s.shares.empty()) {
    lo.batch = s.shares[me];
    lo.global_batch = std::accumulate(s.shares.begin(), s.shares.end(), int64_t{0});
    lo.share_offset = share_offsets(s.shares)[me];
    lo.max_batch = std::max(lo.batch, s.new_shares.empty() ? int64_t{0} : s.new_shares[me]);
  }
  std::unique_ptr<ShareBalancer> balancer;
  if (s.balance) {
    ShareOptions so;
    so.heterogeneous = true;
    so.partition = PartitionKind::measured;
    so.calibration_steps = 2;
    so.share_quantum = 8;
    balancer = std::make_unique<ShareBalancer>(so, comm.rank(), comm.size(), lo.global_batch);
    lo.max_batch = balancer->max_share();
  }
  net->set_batch(lo.batch);
  Loader loader(data(), lo);
  Sgd sgd(*backend, net->param_count(), {s.momentum, s.weight_decay, false});
  ExchangeOptions xo;
  xo.strategy = s.strategy;
  xo.algorithm = s.algorithm;
  xo.bucket_elements = s.bucket_elements;
  xo.overlap = s.overlap;
  auto exchange = set_up_exchange(xo, *net, comm);
  StagedInput staged_input(*net, loader);
  const bool staged = s.staged_rank == comm.rank();
  TrainState state{*net, sgd, *exchange, loader, nullptr, staged ? &staged_input : nullptr};
  if (!s.shares.empty()) {
    state.global_batch = lo.global_batch;
    state.world = comm.size();
  }
  Trajectory t;
  for (int64_t step = 1; step <= s.steps; ++step) {
    const bool average = step % s.period == 0 || step == s.steps;
    const StepResult res = train_step(state, s.lr, average);
    const StepVerdict& v = res.verdict;
    EXPECT_FALSE(v.diverged);
    EXPECT_EQ(state.step, step);
    EXPECT_GT(at(res.seconds, Phase::step), 0.0);
    if (balancer) {  // the share of the latest change in force at this step
      int64_t expected = 0;
      for (const ShareChange& c : balancer->changes())
        if (c.step <= step) expected = c.shares[me];
      EXPECT_EQ(res.batch, expected) << "step " << step;
    } else if (!s.shares.empty()) {  // batch seq = step - 1; the change applies from change_after + prefetch + 1
      const bool changed = s.change_after > 0 && step - 1 >= s.change_after + lo.prefetch + 1;
      EXPECT_EQ(res.batch, changed ? s.new_shares[me] : s.shares[me]) << "step " << step;
    }
    // The mean over the global batch: weighted by share (equal shares: the mean over ranks).
    const double part = s.shares.empty() ? 1.0 / comm.size() : static_cast<double>(res.batch) / lo.global_batch;
    double mean = res.local_loss * part;
    comm.allreduce_sum(&mean, 1);
    t.loss.push_back(mean);
    if (step == s.change_after)
      loader.set_share(s.new_shares[me], share_offsets(s.new_shares)[me], loader.position() + lo.prefetch + 1);
    if (balancer) {
      const double seconds = static_cast<double>(res.batch) * (comm.rank() == 0 ? 3e-3 : 1e-3);
      balancer->after_step(step, seconds, res.batch, loader, lo.prefetch, staged ? 1 : 0, comm);
    }
    t.folded.push_back(v.exchanged ? v.loss : std::numeric_limits<double>::quiet_NaN());
  }
  if (balancer) {  // the speeds changed the shares, at one step on every rank
    EXPECT_EQ(balancer->changes().size(), 2u);
    double step_sum = static_cast<double>(balancer->changes().back().step);
    comm.allreduce_sum(&step_sum, 1);
    EXPECT_EQ(step_sum, static_cast<double>(balancer->changes().back().step * comm.size()));
    EXPECT_LT(balancer->shares()[0], balancer->shares()[1]);  // the slow rank got less
  }
  t.params.assign(net->params(), net->params() + net->param_count());
  return t;
}

DpSetup single_rank_reference(const DpSetup& s, int world) {
  DpSetup ref = s;
  ref.strategy = DistStrategy::sync;
  ref.algorithm = AllreduceAlgorithm::mpi;
  ref.batch = s.batch * world;
  ref.period = 1;
  return ref;
}

// |a - b| <= tol * max(1, |b|), element by element.
void expect_close(const std::vector<double>& a, const std::vector<double>& b, double tol, const std::string& what) {
  ASSERT_EQ(a.size(), b.size()) << what;
  for (size_t i = 0; i < a.size(); ++i)
    ASSERT_LE(std::fabs(a[i] - b[i]), tol * std::max(1.0, std::fabs(b[i]))) << what << ", step " << i + 1;
}

void expect_close(const std::vector<float>& a, const std::vector<float>& b, double tol, const std::string& what) {
  ASSERT_EQ(a.size(), b.size()) << what;
  double worst = 0;
  size_t at = 0;
  for (size_t i = 0; i < a.size(); ++i) {
    double d = std::fabs(static_cast<double>(a[i]) - b[i]) / std::max(1.0, std::fabs(static_cast<double>(b[i])));
    if (d > worst) worst = d, at = i;
  }
  EXPECT_LE(worst, tol) << what << ": worst at parameter " << at << " (" << a[at] << " vs " << b[at] << ")";
}

// Every rank holds the same bits as rank 0.
void expect_same_on_all_ranks(Communicator& comm, const std::vector<float>& v, const std::string& what) {
  std::vector<float> root = v;
  comm.broadcast(root.data(), static_cast<int64_t>(root.size()), 0);
  EXPECT_EQ(0, std::memcmp(root.data(), v.data(), v.size() * sizeof(float))) << what << ": ranks disagree";
}

std::string describe(const DpSetup& s, int world) {
  return std::string(s.strategy == DistStrategy::sync ? "sync" : "weight_avg") + "/" +
         allreduce_algorithm_name(s.algorithm) + (s.overlap ? "/overlap" : "/no-overlap") + " period " +
         std::to_string(s.period) + " on " + std::to_string(world) + " ranks x batch " + std::to_string(s.batch);
}

constexpr double kLossTol = 2e-4;   // relative: summation order only
constexpr double kParamTol = 2e-4;

}  // namespace

TEST(DataParallel, SyncMatchesOneRankWithTheGlobalBatch) {
  auto world = Communicator::world();
  auto self = Communicator::self();
  ASSERT_GE(world->size(), 2) << "run under mpiexec -n N with N >= 2";
  DpSetup base;
  const Trajectory ref = run(*self, single_rank_reference(base, world->size()));
  for (AllreduceAlgorithm a : all_allreduce_algorithms())
    for (bool overlap : {true, false}) {
      DpSetup s = base;
      s.algorithm = a;
      s.overlap = overlap;
      const std::string what = describe(s, world->size());
      Trajectory t = run(*world, s);
      expect_close(t.loss, ref.loss, kLossTol, what + " loss");
      expect_close(t.folded, t.loss, 1e-5, what + " folded loss vs separately reduced loss");
      expect_close(t.params, ref.params, kParamTol, what + " final weights");
      expect_same_on_all_ranks(*world, t.params, what);
    }
}

// Shares 3b, b, b, ... (96 + 32 scaled down on 2 ranks), then b, ..., b, 3b from step 5 on:
// the share-weighted gradients follow 1 rank with the global batch (sync, ring and mpi).
TEST(DataParallel, UnequalSharesMatchOneRankWithTheGlobalBatch) {
  auto world = Communicator::world();
  auto self = Communicator::self();
  ASSERT_GE(world->size(), 2) << "run under mpiexec -n N with N >= 2";
  const size_t n = static_cast<size_t>(world->size());
  DpSetup base;
  base.steps = 8;
  base.shares.assign(n, 8);
  base.shares[0] = 24;
  base.new_shares = base.shares;
  std::reverse(base.new_shares.begin(), base.new_shares.end());
  base.change_after = 2;  // from batch 2 + prefetch 2 + 1 = 5: steps 6..8
  DpSetup one = base;
  one.shares.clear();
  one.new_shares.clear();
  one.change_after = 0;
  one.batch = std::accumulate(base.shares.begin(), base.shares.end(), int64_t{0});
  const Trajectory ref = run(*self, one);
  for (AllreduceAlgorithm a : {AllreduceAlgorithm::mpi, AllreduceAlgorithm::ring}) {
    DpSetup s = base;
    s.algorithm = a;
    const std::string what = "shares " + shares_text(s.shares) + " then " + shares_text(s.new_shares) + ", " +
                             allreduce_algorithm_name(a);
    Trajectory t = run(*world, s);
    expect_close(t.loss, ref.loss, kLossTol, what + " loss");
    expect_close(t.folded, t.loss, 1e-5, what + " folded loss vs separately reduced loss");
    expect_close(t.params, ref.params, kParamTol, what + " final weights");
    expect_same_on_all_ranks(*world, t.params, what);
  }
}

// measured shares decided during the run (rank 0 three times slower per sample) while one rank
// stages its input a batch ahead, as a CUDA rank does: every rank switches at the same step, the
// staging rank re-plans for its new batch, and the run follows 1 rank with the global batch.
TEST(DataParallel, BalancedSharesWithAStagingRankMatchOneRankWithTheGlobalBatch) {
  auto world = Communicator::world();
  auto self = Communicator::self();
  ASSERT_GE(world->size(), 2) << "run under mpiexec -n N with N >= 2";
  const size_t n = static_cast<size_t>(world->size());
  DpSetup one;
  one.steps = 9;
  one.batch = 16 * static_cast<int64_t>(n);
  const Trajectory ref = run(*self, one);
  for (int staged_rank : {0, 1}) {
    DpSetup s = one;
    s.batch = 16;
    s.shares.assign(n, 16);
    s.balance = true;
    s.staged_rank = staged_rank;
    const std::string what = "measured shares, rank " + std::to_string(staged_rank) + " staged";
    const Trajectory t = run(*world, s);
    expect_close(t.loss, ref.loss, kLossTol, what + " loss");
    expect_close(t.params, ref.params, kParamTol, what + " final weights");
    expect_same_on_all_ranks(*world, t.params, what);
  }
}

TEST(DataParallel, OneBigBucketAndTinyBuckets) {
  auto world = Communicator::world();
  auto self = Communicator::self();
  DpSetup base;
  base.steps = 2;
  const Trajectory ref = run(*self, single_rank_reference(base, world->size()));
  for (int64_t bucket : {int64_t{1} << 30, int64_t{2003}}) {
    DpSetup s = base;
    s.bucket_elements = bucket;
    s.algorithm = AllreduceAlgorithm::ring;
    Trajectory t = run(*world, s);
    expect_close(t.loss, ref.loss, kLossTol, "bucket " + std::to_string(bucket) + " loss");
    expect_close(t.params, ref.params, kParamTol, "bucket " + std::to_string(bucket) + " weights");
  }
}

TEST(DataParallel, WeightAveragingEveryStepWithPlainSgdMatchesSync) {
  auto world = Communicator::world();
  auto self = Communicator::self();
  DpSetup base;
  base.momentum = 0;
  base.weight_decay = 0;
  const Trajectory ref = run(*self, single_rank_reference(base, world->size()));
  for (AllreduceAlgorithm a : {AllreduceAlgorithm::mpi, AllreduceAlgorithm::ps}) {
    DpSetup s = base;
    s.strategy = DistStrategy::weight_avg;
    s.algorithm = a;
    const std::string what = describe(s, world->size());
    Trajectory t = run(*world, s);
    expect_close(t.loss, ref.loss, kLossTol, what + " loss");
    expect_close(t.folded, t.loss, 1e-5, what + " folded loss");
    expect_close(t.params, ref.params, kParamTol, what + " final weights");
    expect_same_on_all_ranks(*world, t.params, what);
  }
}

// Local SGD written out naively: N nets in one process, net r trains on rank r's batches
// with its own optimizer (velocity stays local), and every `period` steps all weights are
// replaced by their mean.
TEST(DataParallel, WeightAveragingWithPeriodMatchesNaiveLocalSgd) {
  auto world = Communicator::world();
  const int n = world->size();
  DpSetup s;
  s.strategy = DistStrategy::weight_avg;
  s.period = 3;
  s.steps = 8;  // averages after steps 3, 6 and the last
  s.algorithm = AllreduceAlgorithm::ring;
  Trajectory t = run(*world, s);
  expect_same_on_all_ranks(*world, t.params, "weight_avg period 3");

  auto backend = make_backend("cpu");
  backend->set_threads(1);
  std::vector<std::unique_ptr<Net>> nets;
  std::vector<std::unique_ptr<Loader>> loaders;
  std::vector<std::unique_ptr<Sgd>> sgds;
  for (int r = 0; r < n; ++r) {
    nets.push_back(build_model("mlp", *backend, input(), 3));
    nets.back()->set_batch(s.batch);
    LoaderOptions lo;
    lo.batch = s.batch;
    lo.seed = 11;
    lo.rank = r;
    lo.world = n;
    loaders.push_back(std::make_unique<Loader>(data(), lo));
    sgds.push_back(std::make_unique<Sgd>(*backend, nets.back()->param_count(), SgdOptions{s.momentum, s.weight_decay, false}));
  }
  const int64_t count = nets[0]->param_count();
  std::vector<double> ref_loss;
  for (int64_t step = 1; step <= s.steps; ++step) {
    double sum = 0;
    for (int r = 0; r < n; ++r) {
      Batch b;
      ASSERT_TRUE(loaders[r]->next(b));
      sum += nets[r]->forward(b.images, b.labels, b.targets, Mode::train);
      nets[r]->backward();
      sgds[r]->step(nets[r]->params(), nets[r]->grads(), s.lr);
    }
    ref_loss.push_back(sum / n);
    if (step % s.period == 0 || step == s.steps)
      for (int64_t i = 0; i < count; ++i) {
        float mean = 0;
        for (int r = 0; r < n; ++r) mean += nets[r]->params()[i];
        mean *= 1.0f / static_cast<float>(n);
        for (int r = 0; r < n; ++r) nets[r]->params()[i] = mean;
      }
  }
  expect_close(t.loss, ref_loss, kLossTol, "weight_avg period 3 loss vs naive local SGD");
  expect_close(t.params, std::vector<float>(nets[0]->params(), nets[0]->params() + count), kParamTol,
               "weight_avg period 3 weights vs naive local SGD");
}

// The strategies on plain arrays: gradient means per bucket whatever the range chunking, the
// folded loss, and a non-finite loss on one rank stopping every rank at the same step.
TEST(ExchangeStrategy, MeansBucketsAndSharesTheVerdict) {
  auto world = Communicator::world();
  const int n = world->size(), rank = world->rank();
  const int64_t count = 1009;
  for (AllreduceAlgorithm a : all_allreduce_algorithms())
    for (bool overlap : {true, false}) {
      std::vector<float> params(count, 1.0f), grads(count), state(3, static_cast<float>(rank));
      ExchangeOptions xo;
      xo.algorithm = a;
      xo.overlap = overlap;
      xo.bucket_elements = 300;
      auto strategy = make_exchange_strategy(*world, {params.data(), grads.data(), count, state.data(), 3}, xo);
      ExchangeStrategy& ex = *strategy;
      EXPECT_STREQ(ex.name(), a == AllreduceAlgorithm::ps ? "ps" : "sync");
      EXPECT_EQ(ex.times_ps_phases(), a == AllreduceAlgorithm::ps);
      // From the top in buckets of 300 down to the staged tail [0, 300).
      const std::vector<Bucket> expected = {{709, 300}, {409, 300}, {300, 109}, {0, 300}};
      ASSERT_EQ(ex.buckets(), expected);
      for (int step = 0; step < 2; ++step) {
        for (int64_t i = 0; i < count; ++i) grads[i] = static_cast<float>((rank + 1) * (i % 7 + step));
        int updates = 0;
        ex.begin_step(static_cast<float>(rank + 1), [&](int64_t, int64_t) { ++updates; });
        // Ranges of 37 elements from the top, as a net's layers would report them.
        for (int64_t top = count; top > 0; top -= 37) ex.gradients_ready(std::max<int64_t>(0, top - 37), std::min<int64_t>(37, top));
        StepVerdict v = ex.finish_step(true);
        const std::string what = std::string(allreduce_algorithm_name(a)) + (overlap ? " overlap" : "") + " step " +
                                 std::to_string(step);
        EXPECT_TRUE(v.exchanged) << what;
        EXPECT_FALSE(v.diverged) << what;
        EXPECT_DOUBLE_EQ(v.loss, (n + 1) / 2.0) << what;
        const bool applies = a != AllreduceAlgorithm::ps || rank == 0;
        EXPECT_EQ(updates, applies ? 1 : 0) << what;
        if (applies)  // ps: only rank 0 holds the averaged gradients
          for (int64_t i = 0; i < count; ++i)
            ASSERT_FLOAT_EQ(grads[i], (n + 1) / 2.0f * static_cast<float>(i % 7 + step)) << what << " element " << i;
      }
      ex.average_state();
      for (float v : state) EXPECT_FLOAT_EQ(v, (n - 1) / 2.0f);
      // Rank n-1 alone sees a NaN loss: every rank learns it, nobody updates.
      int updates = 0;
      ex.begin_step(rank == n - 1 ? std::numeric_limits<float>::quiet_NaN() : 1.0f,
                    [&](int64_t, int64_t) { ++updates; });
      ex.gradients_ready(0, count);
      StepVerdict v = ex.finish_step(true);
      EXPECT_TRUE(v.diverged) << allreduce_algorithm_name(a);
      EXPECT_EQ(updates, 0);
    }
}

TEST(ExchangeStrategy, WeightAveragingReportsDivergenceAtTheNextAverage) {
  auto world = Communicator::world();
  const int n = world->size(), rank = world->rank();
  std::vector<float> params(50, static_cast<float>(rank)), grads(50, 0.0f), state(2, 2.0f * rank);
  ExchangeOptions xo;
  xo.strategy = DistStrategy::weight_avg;
  xo.algorithm = AllreduceAlgorithm::tree;
  auto strategy = make_exchange_strategy(*world, {params.data(), grads.data(), 50, state.data(), 2}, xo);
  ExchangeStrategy& ex = *strategy;
  EXPECT_STREQ(ex.name(), "weight_avg");
  int updates = 0;
  auto count_update = [&](int64_t, int64_t) { ++updates; };
  ex.begin_step(rank == 0 ? std::numeric_limits<float>::infinity() : 1.0f, count_update);
  StepVerdict v = ex.finish_step(false);
  EXPECT_FALSE(v.exchanged);
  EXPECT_FALSE(v.diverged) << "not known before the next average";
  EXPECT_EQ(updates, rank == 0 ? 0 : 1) << "a rank skips its update on a non-finite loss";
  ex.begin_step(1.0f, count_update);
  v = ex.finish_step(true);
  EXPECT_TRUE(v.exchanged);
  EXPECT_TRUE(v.diverged) << "rank 0's earlier non-finite loss reaches every rank";
  for (float p : params) EXPECT_FLOAT_EQ(p, (n - 1) / 2.0f);
  for (float s : state) EXPECT_FLOAT_EQ(s, static_cast<float>(n - 1));
}

TEST(ExchangeStrategy, RangesOutOfOrderAreRefused) {
  auto world = Communicator::world();
  std::vector<float> params(10), grads(10);
  ExchangeOptions xo;
  xo.overlap = false;
  auto strategy = make_exchange_strategy(*world, {params.data(), grads.data(), 10, nullptr, 0}, xo);
  ExchangeStrategy& ex = *strategy;
  ex.begin_step(1.0f, [](int64_t, int64_t) {});
  EXPECT_THROW(ex.gradients_ready(0, 5), RuntimeError);  // [5, 10) has not been reported
  ex.gradients_ready(5, 5);
  ex.gradients_ready(0, 5);
  StepVerdict v = ex.finish_step(true);
  EXPECT_FALSE(v.diverged);
}

// An algorithm the project knows but this binary lacks (nccl without CUDA) is refused when the
// strategy is made, on every rank alike; where nccl is built, host arenas are refused.
TEST(ExchangeStrategy, UnbuiltAlgorithmsAreRefused) {
  auto world = Communicator::world();
  std::vector<float> params(10), grads(10);
  ExchangeOptions xo;
  xo.algorithm = AllreduceAlgorithm::nccl;
  const bool built = allreduce_algorithm_built(AllreduceAlgorithm::nccl);
  try {
    make_exchange_strategy(*world, {params.data(), grads.data(), 10, nullptr, 0}, xo);
    ADD_FAILURE() << "nccl was accepted on host arenas";
  } catch (const ConfigError& e) {
    const std::string why = built ? "host memory" : "nccl needs the cuda backend";
    EXPECT_NE(std::string(e.what()).find(why), std::string::npos) << e.what();
  }
  EXPECT_THROW(allreduce_sum(*world, AllreduceAlgorithm::nccl, params.data(), 10), std::runtime_error);
}

// Device arenas without CUDA in dist/ are refused with what to do.
TEST(ExchangeStrategy, DeviceArenasNeedTheCudaBuild) {
  if (allreduce_algorithm_built(AllreduceAlgorithm::nccl)) GTEST_SKIP() << "this build has CUDA (test_cuda_*)";
  auto world = Communicator::world();
  std::vector<float> params(10), grads(10);
  ArenaDevice device;
  device.host_accessible = false;
  device.cuda_device = 0;
  for (DistStrategy strategy : all_dist_strategies()) {
    ExchangeOptions xo;
    xo.strategy = strategy;
    try {
      make_exchange_strategy(*world, {params.data(), grads.data(), 10, nullptr, 0, device}, xo);
      ADD_FAILURE() << dist_strategy_name(strategy) << " accepted device arenas without CUDA";
    } catch (const RuntimeError& e) {
      EXPECT_NE(std::string(e.what()).find("-DTRAINSCALE_CUDA=ON"), std::string::npos) << e.what();
    } catch (const ConfigError& e) {  // async_ps and hogwild take host arenas in every build
      EXPECT_TRUE(strategy == DistStrategy::async_ps || strategy == DistStrategy::hogwild) << e.what();
      EXPECT_NE(std::string(e.what()).find("cpu or ref"), std::string::npos) << e.what();
    }
  }
}

// The bucket pipeline marks every bucket in the caller's thread, in order, before it is reduced,
// in every mode; thread and eager mark (eager: and reduce) as buckets become final, deferred
// marks and reduces them all at complete().
TEST(ExchangeStrategy, BucketPipelineMarksBeforeReducing) {
  const BucketPlan plan = BucketPlan::tile(100, 30);  // [70,100) [40,70) [30,40)... tail [0,30)
  for (PipelineMode mode : {PipelineMode::thread, PipelineMode::eager, PipelineMode::deferred}) {
    const std::thread::id caller = std::this_thread::get_id();
    std::vector<int> marked(plan.buckets.size(), 0), reduced(plan.buckets.size(), 0);
    std::atomic<int> order_errors{0};
    BucketPipeline pipeline(
        plan, 100, mode,
        [&](size_t i) {
          if (!marked[i]) ++order_errors;
          reduced[i] = 1;
        },
        [&](size_t i) {
          if (std::this_thread::get_id() != caller || (i > 0 && !marked[i - 1])) ++order_errors;
          marked[i] = 1;
        });
    pipeline.begin_step();
    pipeline.gradients_ready(60, 40);  // [70, 100) is final
    EXPECT_EQ(marked[0], mode == PipelineMode::deferred ? 0 : 1) << "mode " << static_cast<int>(mode);
    if (mode != PipelineMode::thread)  // the thread may or may not have reduced it yet
      EXPECT_EQ(reduced[0], mode == PipelineMode::eager ? 1 : 0) << "mode " << static_cast<int>(mode);
    pipeline.gradients_ready(0, 60);
    pipeline.complete();
    for (size_t i = 0; i < plan.buckets.size(); ++i) EXPECT_TRUE(marked[i] && reduced[i]) << "bucket " << i;
    EXPECT_EQ(order_errors.load(), 0) << "mode " << static_cast<int>(mode);
  }
}
