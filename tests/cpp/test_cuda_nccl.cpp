// NCCL and device-resident arenas (dist/cuda/): the NCCL all-reduce against a host sum, `sync`
// with dist.allreduce nccl on the cuda backend's device arenas against `sync` with mpi on the
// ref backend's host arenas (same data, same averaged update), and the staging path of the MPI
// algorithms (mpi, ring) on device arenas against the same host run; the GPU's sums of
// dist.hetero_allreduce device (its protocol: test_mpi_device_sum.cpp).
//
// Runs as one rank (CTest, one process per case: an MPI world of one) and under
// `mpiexec -np N` where a node has at least N GPUs (NCCL refuses two ranks on one GPU); every
// case skips with the reason where there is no CUDA device. Multi-rank staging on one shared GPU
// is test_cuda_mpi_staging.cpp.
#include <gtest/gtest.h>

#include <cuda_runtime.h>
#include <nccl.h>

#include <cmath>
#include <memory>
#include <string>
#include <vector>

#include "backend/backend_factory.h"
#include "backend/cuda/cuda_backend.h"
#include "core/error.h"
#include "dist/allreduce_bench.h"
#include "dist/cuda/device_exchange.h"
#include "dist/cuda/nccl_comm.h"

#include "exchange_harness.h"
#include "mpi_test_environment.h"

#include "cuda_test_support.h"

namespace ts {
namespace {

using testing_support::ExchangeRun;
using testing_support::expect_same_run;
using testing_support::run_exchange;

class CudaNccl : public ::testing::Test {
 protected:
  void SetUp() override {
    if (const std::string why = testing_support::cuda_skip_reason(); !why.empty()) GTEST_SKIP() << why;
    comm_ = Communicator::world();
    if (comm_->local_size() > CudaBackend::device_count())
      GTEST_SKIP() << comm_->local_size() << " ranks share " << CudaBackend::device_count()
                   << " GPU(s) on this node, and NCCL refuses two ranks on one GPU (test_cuda_mpi_staging.cpp "
                      "covers shared GPUs)";
    device_ = make_backend("cuda", comm_->local_rank());
    host_ = make_backend("ref");
  }
  ExchangeOptions options(AllreduceAlgorithm algorithm, bool overlap) const {
    ExchangeOptions o;
    o.algorithm = algorithm;
    o.bucket_elements = testing_support::kBucket;
    o.overlap = overlap;
    o.cuda_aware_mpi = false;  // the staging path, whatever the library
    return o;
  }
  std::unique_ptr<Communicator> comm_;
  std::unique_ptr<Backend> device_, host_;
};

// Random-looking floats of every rank, summed by NCCL on the device and in double on the host.
TEST_F(CudaNccl, AllreduceMatchesAHostSum) {
  NcclCommunicator& nccl = nccl_of(*comm_);
  EXPECT_EQ(&nccl, &nccl_of(*comm_)) << "one NCCL communicator per Communicator";
  EXPECT_EQ(nccl.device(), comm_->local_rank() % CudaBackend::device_count());
  const int n = comm_->size();
  for (int64_t count : {1, 7, 1000003}) {
    auto value = [](int rank, int64_t i) { return std::sin(0.001 * static_cast<double>(i) + rank) * 3.0; };
    std::vector<float> host(static_cast<size_t>(count));
    for (int64_t i = 0; i < count; ++i) host[static_cast<size_t>(i)] = static_cast<float>(value(comm_->rank(), i));
    float* data = nullptr;
    ASSERT_EQ(cudaSetDevice(nccl.device()), cudaSuccess);
    ASSERT_EQ(cudaMalloc(reinterpret_cast<void**>(&data), host.size() * sizeof(float)), cudaSuccess);
    ASSERT_EQ(cudaMemcpy(data, host.data(), host.size() * sizeof(float), cudaMemcpyHostToDevice), cudaSuccess);
    ASSERT_EQ(ncclAllReduce(data, data, host.size(), ncclFloat, ncclSum, nccl.comm(), nccl.stream()), ncclSuccess);
    ASSERT_EQ(cudaStreamSynchronize(nccl.stream()), cudaSuccess);
    ASSERT_EQ(cudaMemcpy(host.data(), data, host.size() * sizeof(float), cudaMemcpyDeviceToHost), cudaSuccess);
    cudaFree(data);
    for (int64_t i = 0; i < count; ++i) {
      double expected = 0;
      for (int q = 0; q < n; ++q) expected += static_cast<float>(value(q, i));
      ASSERT_NEAR(host[static_cast<size_t>(i)], expected, 1e-6 * n * 3.0) << "count " << count << " element " << i;
    }
  }
}

// dist.hetero_allreduce device's sums on the GPU (dist/cuda/cuda_group_sum.cpp): two members'
// buckets from pinned memory added into a range of the device arena, summed over the ranks
// (NCCL, with more than one), scaled, and the mean in the outbox and in the arena.
TEST_F(CudaNccl, GroupSumAddsTheMembersBucketsOnTheGpu) {
  constexpr int64_t kArena = 5000, kOffset = 1234, kCount = 3001;
  auto own = [](int rank, int64_t i) { return 0.5f * static_cast<float>(i % 17) - rank; };
  auto member = [](int rank, size_t m, int64_t i) { return 0.25f * static_cast<float>((i + 3 * m) % 11) + rank; };
  const int device = comm_->local_rank() % CudaBackend::device_count();
  std::vector<float> host(kArena);
  for (int64_t i = 0; i < kArena; ++i) host[static_cast<size_t>(i)] = own(comm_->rank(), i);
  float* grads = nullptr;
  ASSERT_EQ(cudaSetDevice(device), cudaSuccess);
  ASSERT_EQ(cudaMalloc(reinterpret_cast<void**>(&grads), host.size() * sizeof(float)), cudaSuccess);
  ASSERT_EQ(cudaMemcpy(grads, host.data(), host.size() * sizeof(float), cudaMemcpyHostToDevice), cudaSuccess);
  {
    auto sum = make_cuda_group_sum(grads, device, *comm_, 2, kCount);
    for (size_t m = 0; m < 2; ++m) {
      for (int64_t i = 0; i < kCount; ++i) sum->inbox(m)[i] = member(comm_->rank(), m, kOffset + i);
      sum->add(m, kOffset, kCount);
    }
    sum->sum_over_summers(kOffset, kCount);
    const float factor = 1.0f / static_cast<float>(3 * comm_->size());
    sum->scale_to_outbox(kOffset, kCount, factor);
    ASSERT_EQ(cudaMemcpy(host.data(), grads, host.size() * sizeof(float), cudaMemcpyDeviceToHost), cudaSuccess);
    for (int64_t i = 0; i < kArena; ++i) {
      const bool inside = i >= kOffset && i < kOffset + kCount;
      double want = own(comm_->rank(), i);
      if (inside) {
        want = 0;
        for (int q = 0; q < comm_->size(); ++q) want += own(q, i) + member(q, 0, i) + member(q, 1, i);
        want *= factor;
        ASSERT_NEAR(sum->outbox()[i - kOffset], want, 1e-5) << "outbox " << i - kOffset;
      }
      ASSERT_NEAR(host[static_cast<size_t>(i)], want, 1e-5) << "arena " << i << (inside ? " (summed)" : " (untouched)");
    }
  }
  cudaFree(grads);
}

// bench allreduce's nccl point: device buffer, checked against MPI_Allreduce of the same data.
TEST_F(CudaNccl, BenchPointChecksAgainstMpi) {
  for (int64_t count : {1, 1000, 262144}) {
    const AllreduceBenchPoint p = bench_allreduce(*comm_, {AllreduceAlgorithm::nccl, count, 3, 1, true, nullptr});
    EXPECT_EQ(p.wrong, 0) << "count " << count;
    if (comm_->rank() == 0) {
      EXPECT_GT(p.time_avg, 0.0);
      // Each call's device time (CUDA events), the slowest rank's: their spread brackets the mean.
      EXPECT_GT(p.call_min, 0.0);
      EXPECT_LE(p.call_min, p.call_max);
      EXPECT_GE(p.call_max, p.time_max * (1 - 1e-9));
      EXPECT_GE(p.call_stdev, 0.0);
    }
  }
}

// sync + nccl on device arenas takes the same averaged step as sync + mpi on host arenas,
// with buckets queued as backward reports them (overlap) and all after backward.
TEST_F(CudaNccl, SyncWithNcclMatchesMpiOnHostArenas) {
  const ExchangeRun want = run_exchange(*host_, *comm_, options(AllreduceAlgorithm::mpi, false));
  EXPECT_EQ(want.transport, ArenaTransport::host);
  for (bool overlap : {true, false}) {
    const ExchangeRun got = run_exchange(*device_, *comm_, options(AllreduceAlgorithm::nccl, overlap));
    EXPECT_EQ(got.transport, ArenaTransport::nccl);
    expect_same_run(got, want, 1e-5, std::string("nccl, overlap ") + (overlap ? "on" : "off"));
  }
}

// A NaN loss on the last rank stops every rank alike at that step: no update there.
TEST_F(CudaNccl, SyncWithNcclSharesTheDivergenceVerdict) {
  testing_support::RunSettings run;
  run.nan_rank = comm_->size() - 1;
  run.nan_step = 2;
  const ExchangeRun want = run_exchange(*host_, *comm_, options(AllreduceAlgorithm::mpi, false), run);
  const ExchangeRun got = run_exchange(*device_, *comm_, options(AllreduceAlgorithm::nccl, true), run);
  ASSERT_TRUE(got.verdicts[2].diverged);
  EXPECT_FALSE(got.verdicts[1].diverged);
  expect_same_run(got, want, 1e-5, "nccl with a NaN loss");
}

// The per-step times stay honest: NCCL time from events, the host's wait, the update.
TEST_F(CudaNccl, SyncWithNcclTimesItsBuckets) {
  const ExchangeRun got = run_exchange(*device_, *comm_, options(AllreduceAlgorithm::nccl, true));
  for (const StepVerdict& v : got.verdicts) {
    EXPECT_GT(v.times.comm, 0.0);
    EXPECT_GE(v.times.comm_wait, 0.0);
    EXPECT_GT(v.times.optimizer, 0.0);
  }
}

// loss_reads: log. The loss handed over on the device and every verdict read after the last step
// (DeviceLossCombiner::combined): the same updates and mean losses as sync + mpi reading each
// step, NCCL time for every step, and no host wait in any; a NaN on the last rank makes that
// step's mean NaN on every rank (the update still runs, as on one rank: train/loss_ledger.h).
TEST_F(CudaNccl, SyncWithNcclDefersItsVerdictsToTheLossReads) {
  const ExchangeRun want = run_exchange(*host_, *comm_, options(AllreduceAlgorithm::mpi, false));
  testing_support::RunSettings run;
  run.losses_on_device = true;
  for (bool overlap : {true, false}) {
    const ExchangeRun got = run_exchange(*device_, *comm_, options(AllreduceAlgorithm::nccl, overlap), run);
    expect_same_run(got, want, 1e-5, std::string("nccl deferred, overlap ") + (overlap ? "on" : "off"));
    for (size_t s = 0; s < got.verdicts.size(); ++s) {
      EXPECT_EQ(got.verdicts[s].combined_id, static_cast<int64_t>(s) + 1);
      EXPECT_GT(got.verdicts[s].times.comm, 0.0) << "step " << s;
      EXPECT_EQ(got.verdicts[s].times.comm_wait, 0.0) << "step " << s << ": the host waited";
    }
  }
  run.nan_rank = comm_->size() - 1;
  run.nan_step = 2;
  const ExchangeRun got = run_exchange(*device_, *comm_, options(AllreduceAlgorithm::nccl, true), run);
  for (size_t s = 0; s < got.verdicts.size(); ++s) {
    EXPECT_EQ(std::isnan(got.verdicts[s].loss), s == 2) << "step " << s << ": mean " << got.verdicts[s].loss;
    EXPECT_FALSE(got.verdicts[s].diverged) << "found by the reader, not the step";
  }
}

// The MPI algorithms on device arenas stage every bucket through pinned host memory: the same
// arithmetic as on host arenas.
TEST_F(CudaNccl, StagedMpiAndRingMatchHostArenas) {
  for (AllreduceAlgorithm a : {AllreduceAlgorithm::mpi, AllreduceAlgorithm::ring}) {
    const ExchangeRun want = run_exchange(*host_, *comm_, options(a, false));
    for (bool overlap : {true, false}) {
      const ExchangeRun got = run_exchange(*device_, *comm_, options(a, overlap));
      EXPECT_EQ(got.transport, ArenaTransport::staged);
      expect_same_run(got, want, 1e-6,
                      std::string(allreduce_algorithm_name(a)) + " staged, overlap " + (overlap ? "on" : "off"));
    }
  }
}

// nccl needs device arenas and the sync strategy: clear errors otherwise.
TEST_F(CudaNccl, NcclRefusesHostArenasAndWeightAveraging) {
  std::vector<float> params(10), grads(10);
  ExchangeOptions o = options(AllreduceAlgorithm::nccl, true);
  try {
    make_exchange_strategy(*comm_, {params.data(), grads.data(), 10, nullptr, 0, {}}, o);
    ADD_FAILURE() << "nccl accepted host arenas";
  } catch (const ConfigError& e) {
    EXPECT_NE(std::string(e.what()).find("host memory"), std::string::npos) << e.what();
  }
  o.strategy = DistStrategy::weight_avg;
  DeviceBuffer p = device_->allocate(40), g = device_->allocate(40);
  try {
    make_exchange_strategy(*comm_, {p.f32(), g.f32(), 10, nullptr, 0, testing_support::arena_device(*device_)}, o);
    ADD_FAILURE() << "nccl accepted weight_avg";
  } catch (const ConfigError& e) {
    EXPECT_NE(std::string(e.what()).find("weight_avg"), std::string::npos) << e.what();
  }
}

}  // namespace
}  // namespace ts
