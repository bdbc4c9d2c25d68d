// The MPI algorithms on device-resident arenas (dist/arena_link.h, dist/cuda/cuda_arena_link.cpp):
// every exchange strategy (sync with mpi, ring, tree, shm; the parameter server; weight_avg) on
// the cuda backend's device arenas, staged through pinned host memory, against the same run on
// the ref backend's host arenas: the same averaged updates, state averages, verdicts and
// divergence. Several ranks may share one GPU here (no NCCL).
//
// Run on a machine with a GPU, as one rank (CTest) and on several ranks sharing it:
//   mpiexec -np 2 --oversubscribe build-dev/bin/test_cuda_mpi_staging
// (Open MPI as root adds --allow-run-as-root). Every case skips with the reason where there is
// no CUDA device; every case passes on any number of ranks.
#include <gtest/gtest.h>

#include <memory>
#include <string>

#include "backend/backend_factory.h"
#include "backend/cuda/cuda_backend.h"
#include "core/error.h"

#include "exchange_harness.h"
#include "mpi_test_environment.h"

#include "cuda_test_support.h"

namespace ts {
namespace {

using testing_support::ExchangeRun;
using testing_support::expect_same_run;
using testing_support::run_exchange;
using testing_support::RunSettings;

class CudaMpiStaging : public ::testing::Test {
 protected:
  void SetUp() override {
    if (const std::string why = testing_support::cuda_skip_reason(); !why.empty()) GTEST_SKIP() << why;
    comm_ = Communicator::world();
    device_ = make_backend("cuda", comm_->local_rank());
    host_ = make_backend("ref");
  }
  static ExchangeOptions options(DistStrategy strategy, AllreduceAlgorithm algorithm, bool overlap) {
    ExchangeOptions o;
    o.strategy = strategy;
    o.algorithm = algorithm;
    o.bucket_elements = testing_support::kBucket;
    o.overlap = overlap;
    o.cuda_aware_mpi = false;  // the staging path, whatever the library
    return o;
  }
  // The device run of `o` against the host run of the same options.
  void expect_staged_like_host(const ExchangeOptions& o, const RunSettings& run, const std::string& what) {
    const ExchangeRun want = run_exchange(*host_, *comm_, o, run);
    ASSERT_EQ(want.transport, ArenaTransport::host) << what;
    const ExchangeRun got = run_exchange(*device_, *comm_, o, run);
    EXPECT_EQ(got.transport, ArenaTransport::staged) << what;
    expect_same_run(got, want, 1e-6, what + " on " + std::to_string(comm_->size()) + " rank(s)");
  }
  std::unique_ptr<Communicator> comm_;
  std::unique_ptr<Backend> device_, host_;
};

TEST_F(CudaMpiStaging, SyncMatchesHostArenasForEveryMpiAlgorithm) {
  for (AllreduceAlgorithm a : {AllreduceAlgorithm::mpi, AllreduceAlgorithm::ring, AllreduceAlgorithm::tree,
                               AllreduceAlgorithm::shm})
    for (bool overlap : {true, false})
      expect_staged_like_host(options(DistStrategy::sync, a, overlap), {},
                              std::string("sync ") + allreduce_algorithm_name(a) + (overlap ? " overlap" : ""));
}

TEST_F(CudaMpiStaging, ParameterServerMatchesHostArenas) {
  for (bool overlap : {true, false})
    expect_staged_like_host(options(DistStrategy::sync, AllreduceAlgorithm::ps, overlap), {},
                            std::string("ps") + (overlap ? " overlap" : ""));
}

TEST_F(CudaMpiStaging, WeightAveragingMatchesHostArenas) {
  RunSettings run;
  run.steps = 5;
  run.period = 2;
  for (AllreduceAlgorithm a : {AllreduceAlgorithm::mpi, AllreduceAlgorithm::ring, AllreduceAlgorithm::ps})
    expect_staged_like_host(options(DistStrategy::weight_avg, a, false), run,
                            std::string("weight_avg period 2 ") + allreduce_algorithm_name(a));
}

// A NaN loss on the last rank: every strategy reports it on every rank as on host arenas.
TEST_F(CudaMpiStaging, DivergenceIsSharedAsOnHostArenas) {
  RunSettings run;
  run.nan_rank = comm_->size() - 1;
  run.nan_step = 1;
  expect_staged_like_host(options(DistStrategy::sync, AllreduceAlgorithm::ring, true), run, "sync ring, NaN");
  expect_staged_like_host(options(DistStrategy::sync, AllreduceAlgorithm::ps, true), run, "ps, NaN");
  run.steps = 4;
  run.period = 2;
  expect_staged_like_host(options(DistStrategy::weight_avg, AllreduceAlgorithm::mpi, false), run, "weight_avg, NaN");
}

// With cuda_aware_mpi allowed, algorithm mpi hands device memory to a CUDA-aware library and
// stages otherwise; either way the run matches the host arenas and says which path it took.
TEST_F(CudaMpiStaging, CudaAwareMpiWhereTheLibraryHasIt) {
  ExchangeOptions o = options(DistStrategy::sync, AllreduceAlgorithm::mpi, true);
  o.cuda_aware_mpi = true;
  const ExchangeRun want = run_exchange(*host_, *comm_, o);
  const ExchangeRun got = run_exchange(*device_, *comm_, o);
  const ArenaTransport expected = mpi_library().cuda_aware ? ArenaTransport::cuda_aware_mpi : ArenaTransport::staged;
  EXPECT_EQ(got.transport, expected) << "MPI library " << mpi_library().flavor << " " << mpi_library().version
                                     << (mpi_library().cuda_aware ? " (CUDA-aware)" : " (not CUDA-aware)");
  expect_same_run(got, want, 1e-5, std::string("sync mpi, ") + arena_transport_name(got.transport));
  o.algorithm = AllreduceAlgorithm::ring;  // sums on the host: always staged
  EXPECT_EQ(run_exchange(*device_, *comm_, o).transport, ArenaTransport::staged);
}

}  // namespace
}  // namespace ts
