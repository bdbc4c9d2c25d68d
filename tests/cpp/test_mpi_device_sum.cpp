// dist.hetero_allreduce device's protocol (dist/device_sum_strategy.h, dist/group_sum.h) on 2, 3
// and 4 ranks: host ranks send their buckets to a summing rank, the summers sum over each
// other, the mean comes back. Here the summers sum in host memory (make_host_group_sum, the
// stand-in for the GPU's sums), so every grouping of ranks into "nodes" can be tried on one
// machine; the result must be the plain all-reduce's: the same parameters (to rounding: the sums
// are taken in another order), the same mean losses and divergence verdicts. The GPU's own
// sums (dist/cuda/cuda_group_sum.cpp) are checked on a GPU machine (test_cuda_nccl.cpp's
// GroupSumAddsTheMembersBucketsOnTheGpu; a CPU and a CUDA rank: scripts/device_hetero.sh).
#include <gtest/gtest.h>

#include <string>
#include <vector>

#include "backend/backend_factory.h"
#include "core/error.h"
#include "dist/device_sum_strategy.h"
#include "exchange_harness.h"
#include "mpi_test_environment.h"

namespace ts {
namespace {

using testing_support::ExchangeRun;
using testing_support::RunSettings;
using testing_support::run_exchange;

TEST(SumGroups, EachNodesHostRanksGoToItsGpuRanksInTurn) {
  // node 7: ranks 0 (cpu), 1 (gpu), 3 (cpu), 4 (gpu), 5 (cpu); node 9: ranks 2 (gpu), 6 (cpu)
  const std::vector<RankPlace> places = {{7, false}, {7, true}, {9, true}, {7, false}, {7, true}, {7, false}, {9, false}};
  const SumGroups g = SumGroups::of(places);
  EXPECT_EQ(g.summer_of, (std::vector<int>{1, 1, 2, 4, 4, 1, 2}));
  EXPECT_TRUE(g.is_summer(1) && g.is_summer(2) && g.is_summer(4));
  EXPECT_FALSE(g.is_summer(0));
  EXPECT_EQ(g.members_of(1), (std::vector<int>{0, 5}));
  EXPECT_EQ(g.members_of(4), (std::vector<int>{3}));
  EXPECT_EQ(g.members_of(2), (std::vector<int>{6}));
}

TEST(SumGroups, ANodeWithoutAGpuRankIsRefusedNamingItsRanks) {
  const std::vector<RankPlace> places = {{1, true}, {2, false}, {1, false}, {2, false}};
  try {
    SumGroups::of(places);
    FAIL() << "a node without a GPU rank was accepted";
  } catch (const ConfigError& e) {
    const std::string what = e.what();
    EXPECT_NE(what.find("dist.hetero_allreduce"), std::string::npos) << what;
    EXPECT_NE(what.find("rank(s) 1, 3 runs no CUDA rank"), std::string::npos) << what;
  }
}

class DeviceSum : public ::testing::Test {
 protected:
  void SetUp() override {
    comm_ = Communicator::world();
    backend_ = make_backend("ref");
  }

  static ExchangeOptions options(bool overlap) {
    ExchangeOptions o;
    o.algorithm = AllreduceAlgorithm::mpi;
    o.bucket_elements = testing_support::kBucket;
    o.overlap = overlap;
    return o;
  }

  // The strategy with `places` standing for where the ranks run (the summers sum on the host).
  static testing_support::MakeExchange device_sum(std::vector<RankPlace> places, bool overlap) {
    return [places, overlap](Communicator& comm, const ModelArenas& arenas) -> std::unique_ptr<ExchangeStrategy> {
      const MakeGroupSum make_sum = [&arenas](Communicator& summers, size_t members, int64_t capacity) {
        return make_host_group_sum(arenas.grads, summers, AllreduceAlgorithm::mpi, members, capacity);
      };
      return std::make_unique<DeviceSumExchange>(comm, arenas, options(overlap), SumGroups::of(places), make_sum);
    };
  }

  // The layouts tried: one node with one GPU rank; two "nodes" (rank parity) each led by its
  // lowest rank; one node with two GPU ranks sharing the host ranks (3 ranks or more).
  std::vector<std::pair<std::string, std::vector<RankPlace>>> layouts() const {
    const int n = comm_->size();
    std::vector<std::pair<std::string, std::vector<RankPlace>>> all;
    std::vector<RankPlace> one, parity, two;
    for (int r = 0; r < n; ++r) {
      one.push_back({0, r == 0});
      parity.push_back({static_cast<uint64_t>(r % 2), r < 2});
      two.push_back({0, r == 1 || r == 2});
    }
    all.emplace_back("one node, rank 0 sums", one);
    all.emplace_back("two nodes by parity", parity);
    if (n >= 3) all.emplace_back("one node, ranks 1 and 2 sum", two);
    return all;
  }

  std::unique_ptr<Communicator> comm_;
  std::unique_ptr<Backend> backend_;
};

TEST_F(DeviceSum, MatchesThePlainAllreduce) {
  const ExchangeRun want = run_exchange(*backend_, *comm_, options(false));
  for (const auto& [name, places] : layouts())
    for (bool overlap : {false, true}) {
      const ExchangeRun got = run_exchange(*backend_, *comm_, options(overlap), {}, device_sum(places, overlap));
      testing_support::expect_same_run(got, want, 1e-5, name + (overlap ? ", overlap" : ""));
      EXPECT_EQ(got.transport, ArenaTransport::device_sum);
    }
}

TEST_F(DeviceSum, SharesTheDivergenceVerdict) {
  RunSettings run;
  run.nan_rank = comm_->size() - 1;  // a host rank in every layout
  run.nan_step = 2;
  const ExchangeRun want = run_exchange(*backend_, *comm_, options(false), run);
  ASSERT_TRUE(want.verdicts[2].diverged);
  for (const auto& [name, places] : layouts()) {
    const ExchangeRun got = run_exchange(*backend_, *comm_, options(true), run, device_sum(places, true));
    testing_support::expect_same_run(got, want, 1e-5, name);
  }
}

TEST_F(DeviceSum, RanksOnHostsWithoutAGpuRankAreRefusedByTheFactory) {
  // The trainer's path: every rank here has host arenas, so no node has a GPU rank to sum on.
  ExchangeOptions o = options(true);
  o.device_sum = true;
  o.algorithm = AllreduceAlgorithm::nccl;
  std::vector<float> params(8), grads(8);
  const ModelArenas arenas{params.data(), grads.data(), 8, nullptr, 0, {}};
  if (!allreduce_algorithm_built(AllreduceAlgorithm::nccl)) {
    EXPECT_THROW(make_exchange_strategy(*comm_, arenas, o), ConfigError) << "a build without NCCL";
    return;
  }
  try {
    make_exchange_strategy(*comm_, arenas, o);
    FAIL() << "device sums accepted without a GPU rank";
  } catch (const ConfigError& e) {
    EXPECT_NE(std::string(e.what()).find("runs no CUDA rank"), std::string::npos) << e.what();
  }
}

}  // namespace
}  // namespace ts
