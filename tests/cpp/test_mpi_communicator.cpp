// Communicator collectives under mpiexec (2, 3 and 4 ranks): results checked element by element
// against values every rank can compute on its own.
#include <gtest/gtest.h>
#include <mpi.h>

#include <string>
#include <vector>

#include "dist/communicator.h"

#include "mpi_test_environment.h"

using namespace ts;

TEST(Communicator, WorldMatchesMpi) {
  auto comm = Communicator::world();
  int rank = -1, size = -1;
  MPI_Comm_rank(MPI_COMM_WORLD, &rank);
  MPI_Comm_size(MPI_COMM_WORLD, &size);
  EXPECT_EQ(comm->rank(), rank);
  EXPECT_EQ(comm->size(), size);
  EXPECT_GE(size, 2) << "run this test under mpiexec -n N with N >= 2";
  EXPECT_FALSE(comm->host().empty());
}

// local_rank / local_size against the processor names of all ranks: the ranks of a host, in
// rank order (here every rank runs on one machine: local = world).
TEST(Communicator, LocalRankCountsTheRanksOfAHost) {
  auto comm = Communicator::world();
  const int n = comm->size();
  char name[MPI_MAX_PROCESSOR_NAME] = {};
  int len = 0;
  MPI_Get_processor_name(name, &len);
  std::vector<char> all(static_cast<size_t>(n) * MPI_MAX_PROCESSOR_NAME);
  MPI_Allgather(name, MPI_MAX_PROCESSOR_NAME, MPI_CHAR, all.data(), MPI_MAX_PROCESSOR_NAME, MPI_CHAR, MPI_COMM_WORLD);
  auto host_of = [&](int r) { return std::string(all.data() + static_cast<size_t>(r) * MPI_MAX_PROCESSOR_NAME); };
  int local_rank = 0, local_size = 0;
  for (int r = 0; r < n; ++r)
    if (host_of(r) == host_of(comm->rank())) local_rank += r < comm->rank(), ++local_size;
  EXPECT_EQ(comm->local_rank(), local_rank);
  EXPECT_EQ(comm->local_size(), local_size);
  EXPECT_EQ(comm->local_size(), n) << "the test runs every rank on one machine";
  auto self = Communicator::self();
  EXPECT_EQ(self->local_rank(), 0);
  EXPECT_EQ(self->local_size(), 1);
}

TEST(Communicator, AllreduceSumFloatAndDouble) {
  auto comm = Communicator::world();
  const int n = comm->size(), r = comm->rank();
  for (int64_t count : {0, 1, 7, 1009, 100003}) {
    std::vector<float> f(static_cast<size_t>(count));
    std::vector<double> d(static_cast<size_t>(count));
    for (int64_t i = 0; i < count; ++i) f[i] = static_cast<float>((r + 1) * (i % 13)), d[i] = (r + 1) * 0.5 + i;
    comm->allreduce_sum(f.data(), count);
    comm->allreduce_sum(d.data(), count);
    const double ranks_sum = n * (n + 1) / 2.0;  // sum of (r + 1)
    for (int64_t i = 0; i < count; ++i) {
      ASSERT_EQ(f[i], static_cast<float>(ranks_sum * (i % 13))) << "count " << count << " element " << i;
      ASSERT_DOUBLE_EQ(d[i], ranks_sum * 0.5 + n * i) << "count " << count << " element " << i;
    }
  }
}

TEST(Communicator, GatherToRootIsRankMajor) {
  auto comm = Communicator::world();
  std::vector<float> local = {static_cast<float>(comm->rank()), 10.0f + comm->rank(), 20.0f + comm->rank()};
  auto all = comm->gather_to_root(local);
  if (comm->rank() == 0) {
    ASSERT_EQ(all.size(), 3u * comm->size());
    for (int r = 0; r < comm->size(); ++r)
      for (int k = 0; k < 3; ++k) EXPECT_EQ(all[r * 3 + k], 10.0f * k + r);
  } else {
    EXPECT_TRUE(all.empty());
  }
  auto names = comm->gather_strings_to_root(std::string(static_cast<size_t>(comm->rank()), 'x') + "host");
  if (comm->rank() == 0) {
    ASSERT_EQ(names.size(), static_cast<size_t>(comm->size()));
    for (int r = 0; r < comm->size(); ++r) EXPECT_EQ(names[r], std::string(static_cast<size_t>(r), 'x') + "host");
  }
}

TEST(Communicator, Broadcast) {
  auto comm = Communicator::world();
  double v[2] = {comm->rank() == 1 ? 3.5 : 0.0, comm->rank() == 1 ? -1.0 : 0.0};
  comm->broadcast(v, 2, 1);
  EXPECT_EQ(v[0], 3.5);
  EXPECT_EQ(v[1], -1.0);
}

// Blobs (a checkpoint's per-rank state): rank r's bytes of different lengths (one empty, one
// with every byte value) reach rank 0 in rank order, and rank 0's r-th string reaches rank r.
TEST(Communicator, BlobsGoToAndComeFromRankZero) {
  auto comm = Communicator::world();
  auto blob_of = [](int rank, char salt) {
    std::string b;
    for (int i = 0; i < rank * 300; ++i) b.push_back(static_cast<char>((i * 7 + rank + salt) & 0xff));
    return b;
  };
  const std::vector<std::string> gathered = comm->gather_blobs_to_root(blob_of(comm->rank(), 'g'));
  if (comm->rank() == 0) {
    ASSERT_EQ(gathered.size(), static_cast<size_t>(comm->size()));
    for (int r = 0; r < comm->size(); ++r) EXPECT_EQ(gathered[static_cast<size_t>(r)], blob_of(r, 'g')) << "rank " << r;
  } else {
    EXPECT_TRUE(gathered.empty());
  }
  // One at a time (checkpoint rank parts): rank 0 is handed each other rank's blob in rank order
  // and makes each rank's just before sending it; nobody else calls either function.
  std::vector<int> taken;
  comm->gather_blobs_to_root(blob_of(comm->rank(), 't'), [&](int r, std::string&& b) {
    EXPECT_EQ(comm->rank(), 0);
    EXPECT_EQ(b, blob_of(r, 't')) << "rank " << r;
    taken.push_back(r);
  });
  std::vector<int> expected;
  for (int r = 1; comm->rank() == 0 && r < comm->size(); ++r) expected.push_back(r);
  EXPECT_EQ(taken, expected);
  std::vector<int> made;
  const std::string mine = comm->scatter_blobs_from_root([&](int r) {
    EXPECT_EQ(comm->rank(), 0);
    made.push_back(r);
    return blob_of(r, 'm');
  });
  EXPECT_EQ(mine, blob_of(comm->rank(), 'm'));
  if (comm->rank() == 0) expected.push_back(0);  // its own last
  EXPECT_EQ(made, expected);
}

TEST(Communicator, FloatGatherBroadcastSelfAndThreadLevel) {
  auto comm = Communicator::world();
  const int n = comm->size(), r = comm->rank();
  float local[3] = {1.0f * r, 10.0f + r, 20.0f + r};
  std::vector<float> all(r == 0 ? 3u * n : 0u);
  comm->gather_to_root(local, 3, r == 0 ? all.data() : nullptr);
  if (r == 0)
    for (int q = 0; q < n; ++q)
      for (int k = 0; k < 3; ++k) EXPECT_EQ(all[q * 3 + k], 10.0f * k + q);
  std::vector<float> v(1000, r == n - 1 ? 2.5f : 0.0f);
  comm->broadcast(v.data(), static_cast<int64_t>(v.size()), n - 1);
  for (float x : v) ASSERT_EQ(x, 2.5f);
  auto self = Communicator::self();
  EXPECT_EQ(self->size(), 1);
  EXPECT_EQ(self->rank(), 0);
  float one = 3.0f;
  self->allreduce_sum(&one, 1);
  EXPECT_EQ(one, 3.0f);
  EXPECT_TRUE(mpi_threads_serialized()) << "MpiSession asks for MPI_THREAD_SERIALIZED";
}
