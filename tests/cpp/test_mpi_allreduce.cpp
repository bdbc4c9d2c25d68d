// Every all-reduce algorithm against MPI_Allreduce under mpiexec (2, 3 and 4 ranks), for
// counts 0, 1, small primes, counts below the world size and large: bit-identical on small
// integer data (whose float sums are exact in any order), within a tight bound on random data.
#include <gtest/gtest.h>
#include <mpi.h>

#include <cmath>
#include <cstring>
#include <limits>
#include <random>

#include "core/error.h"
#include "dist/allreduce.h"
#include "dist/communicator.h"

#include "mpi_test_environment.h"

using namespace ts;

namespace {

// (3 << 20) + 17: the ring cuts its chunks into several 1 MiB slices, the last one short.
const int64_t kCounts[] = {0, 1, 2, 3, 5, 7, 13, 1009, 65537, int64_t{1} << 20, (int64_t{3} << 20) + 17};

std::vector<float> mpi_reference(const std::vector<float>& local) {
  std::vector<float> ref(local.size());
  if (!local.empty())
    EXPECT_EQ(MPI_Allreduce(local.data(), ref.data(), static_cast<int>(local.size()), MPI_FLOAT, MPI_SUM,
                            MPI_COMM_WORLD),
              MPI_SUCCESS);
  return ref;
}

// Every rank ends with the same bits as rank 0 (ring, tree, ps, shm and butterfly: the
// partners of a butterfly step add the same two values, and float addition commutes).
void expect_same_on_all_ranks(const std::vector<float>& got, const std::string& what) {
  std::vector<float> root = got;
  if (!root.empty())
    ASSERT_EQ(MPI_Bcast(root.data(), static_cast<int>(root.size()), MPI_FLOAT, 0, MPI_COMM_WORLD), MPI_SUCCESS);
  // memcmp of two empty vectors' null data() is undefined behaviour (UBSan): compare only bytes.
  EXPECT_TRUE(got.empty() || std::memcmp(root.data(), got.data(), got.size() * sizeof(float)) == 0)
      << what << ": ranks disagree";
}

}  // namespace

TEST(Allreduce, NamesRoundTrip) {
  for (AllreduceAlgorithm a : all_allreduce_algorithms())
    EXPECT_EQ(parse_allreduce_algorithm(allreduce_algorithm_name(a)), a);
  EXPECT_EQ(all_allreduce_algorithms().size(), 6u);
  try {
    parse_allreduce_algorithm("hypercube");
    FAIL() << "an unknown name must be refused";
  } catch (const ConfigError& e) {
    const std::string msg = e.what();
    EXPECT_NE(msg.find("hypercube"), std::string::npos) << msg;
    EXPECT_NE(msg.find("mpi, ring, tree, ps, shm, butterfly"), std::string::npos) << msg;
  }
}

TEST(Allreduce, SmallIntegersAreBitIdenticalToMpiAllreduce) {
  auto comm = Communicator::world();
  const int r = comm->rank();
  for (AllreduceAlgorithm a : all_allreduce_algorithms()) {
    for (int64_t count : kCounts) {
      std::vector<float> data(static_cast<size_t>(count));
      for (int64_t i = 0; i < count; ++i) data[i] = static_cast<float>((i * 7 + r * 13) % 17) - 8.0f;
      const std::vector<float> ref = mpi_reference(data);
      allreduce_sum(*comm, a, data.data(), count);
      const std::string what = std::string(allreduce_algorithm_name(a)) + " count " + std::to_string(count) +
                               " on " + std::to_string(comm->size()) + " ranks";
      for (int64_t i = 0; i < count; ++i) ASSERT_EQ(data[i], ref[i]) << what << ", element " << i << ", rank " << r;
      expect_same_on_all_ranks(data, what);
    }
  }
}

TEST(Allreduce, RandomDataWithinRoundingOfMpiAllreduce) {
  auto comm = Communicator::world();
  const int n = comm->size(), r = comm->rank();
  std::mt19937 rng(1234u + 7u * static_cast<unsigned>(r));
  std::uniform_real_distribution<float> dist(-1.0f, 1.0f);
  for (AllreduceAlgorithm a : all_allreduce_algorithms()) {
    for (int64_t count : kCounts) {
      std::vector<float> data(static_cast<size_t>(count)), magnitude(static_cast<size_t>(count));
      for (int64_t i = 0; i < count; ++i) data[i] = dist(rng), magnitude[i] = std::fabs(data[i]);
      const std::vector<float> ref = mpi_reference(data);
      const std::vector<float> abs_sum = mpi_reference(magnitude);
      allreduce_sum(*comm, a, data.data(), count);
      const std::string what = std::string(allreduce_algorithm_name(a)) + " count " + std::to_string(count);
      // Any summation order is within (n - 1) eps * sum |x| of the exact sum; two orders differ
      // by at most twice that.
      const float eps = std::numeric_limits<float>::epsilon();
      for (int64_t i = 0; i < count; ++i)
        ASSERT_LE(std::fabs(data[i] - ref[i]), 2.0f * n * eps * abs_sum[i]) << what << ", element " << i;
      expect_same_on_all_ranks(data, what);
    }
  }
}

TEST(Allreduce, PsReportsPhaseTimes) {
  auto comm = Communicator::world();
  std::vector<float> data(100003, 1.0f);
  PsTimings t;
  t.gather_s = -1;
  allreduce_sum(*comm, AllreduceAlgorithm::ps, data.data(), static_cast<int64_t>(data.size()), &t);
  EXPECT_GT(t.gather_s, 0.0);
  EXPECT_GT(t.broadcast_s, 0.0);
  EXPECT_GE(t.average_s, 0.0);
  if (comm->rank() == 0) EXPECT_GT(t.average_s, 0.0);
  for (float v : data) ASSERT_EQ(v, static_cast<float>(comm->size()));
  // Other algorithms report zeros.
  allreduce_sum(*comm, AllreduceAlgorithm::ring, data.data(), static_cast<int64_t>(data.size()), &t);
  EXPECT_EQ(t.gather_s + t.average_s + t.broadcast_s, 0.0);
}
