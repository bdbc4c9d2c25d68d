// The shared-memory all-reduce (`shm`, src/dist/shm_allreduce.h) under mpiexec on 2, 3 and 4
// ranks: on one node it must equal the plain float sum in rank order bit for bit (whatever the
// chunking), match MPI_Allreduce exactly on small integers, stay within fp32 rounding of a
// double-precision sum, and leave identical bits on every rank; with small and few pipeline
// buffers (so every count crosses many chunks, ranks wait on each other's progress counters,
// and the buffer rotation wraps within and across calls), repeated calls of changing counts,
// on fake "nodes" (the hierarchical path: shm reduce, ring among node leaders, shm
// broadcast), and in place on shared memory from allocate_shared_floats.
#include <gtest/gtest.h>
#include <mpi.h>

#include <algorithm>
#include <cmath>
#include <cstring>
#include <limits>
#include <random>
#include <string>
#include <vector>

#include "dist/allreduce.h"
#include "dist/communicator.h"
#include "dist/mpi_comm.h"
#include "dist/shm_allreduce.h"
#include "core/error.h"

#include "mpi_test_environment.h"

using namespace ts;

namespace {

// Settings for the communicators created in one test; the defaults come back afterwards.
class ScopedShmSettings {
 public:
  explicit ScopedShmSettings(const ShmAllreduceSettings& s) : saved_(shm_allreduce_settings()) {
    set_shm_allreduce_settings(s);
  }
  ~ScopedShmSettings() { set_shm_allreduce_settings(saved_); }

 private:
  ShmAllreduceSettings saved_;
};

int world_rank() {
  int r = 0;
  MPI_Comm_rank(MPI_COMM_WORLD, &r);
  return r;
}
int world_size() {
  int n = 1;
  MPI_Comm_size(MPI_COMM_WORLD, &n);
  return n;
}

// Every rank's input, on every rank, in rank order.
std::vector<std::vector<float>> all_inputs(const std::vector<float>& local) {
  const int n = world_size();
  std::vector<float> flat(local.size() * static_cast<size_t>(n));
  if (!local.empty())
    EXPECT_EQ(MPI_Allgather(local.data(), static_cast<int>(local.size()), MPI_FLOAT, flat.data(),
                            static_cast<int>(local.size()), MPI_FLOAT, MPI_COMM_WORLD),
              MPI_SUCCESS);
  std::vector<std::vector<float>> out(static_cast<size_t>(n));
  for (int q = 0; q < n; ++q)
    out[static_cast<size_t>(q)].assign(flat.begin() + static_cast<std::ptrdiff_t>(local.size() * q),
                                       flat.begin() + static_cast<std::ptrdiff_t>(local.size() * (q + 1)));
  return out;
}

// Inputs whose float sum depends on the order of addition: magnitudes spread over 2^-12 .. 2^12,
// mixed signs, so partial sums round differently in different orders.
std::vector<float> order_sensitive_data(int64_t count, unsigned seed) {
  std::mt19937 rng(seed);
  std::uniform_real_distribution<float> mant(-1.0f, 1.0f);
  std::uniform_int_distribution<int> expo(-12, 12);
  std::vector<float> v(static_cast<size_t>(count));
  for (auto& x : v) x = std::ldexp(mant(rng), expo(rng));
  return v;
}

struct Checked {
  int64_t not_rank_order = 0, outside_tolerance = 0;
};

// Compares `got` with (a) the float sum in rank order x_0 + x_1 + ... (counted when different)
// and (b) the double sum, within 2 n eps sum|x| (any order's float rounding bound).
Checked check_against_references(const std::vector<float>& got, const std::vector<std::vector<float>>& inputs) {
  Checked c;
  const float eps = std::numeric_limits<float>::epsilon();
  for (size_t i = 0; i < got.size(); ++i) {
    float in_order = inputs[0][i];
    double exact = inputs[0][i], magnitude = std::fabs(inputs[0][i]);
    for (size_t q = 1; q < inputs.size(); ++q) {
      in_order += inputs[q][i];
      exact += inputs[q][i];
      magnitude += std::fabs(inputs[q][i]);
    }
    c.not_rank_order += got[i] != in_order;
    c.outside_tolerance += std::fabs(got[i] - exact) > 2.0 * static_cast<double>(inputs.size()) * eps * magnitude;
  }
  return c;
}

void expect_same_on_all_ranks(const std::vector<float>& got, const std::string& what) {
  std::vector<float> root = got;
  if (!root.empty())
    ASSERT_EQ(MPI_Bcast(root.data(), static_cast<int>(root.size()), MPI_FLOAT, 0, MPI_COMM_WORLD), MPI_SUCCESS);
  // memcmp of two empty vectors' null data() is undefined behaviour (UBSan): compare only bytes.
  EXPECT_TRUE(got.empty() || std::memcmp(root.data(), got.data(), got.size() * sizeof(float)) == 0)
      << what << ": ranks disagree";
}

// Runs shm on order-sensitive data of `count` floats and checks it; `rank_order`: expect the
// exact rank-order float sum (one node). `storage`: where the message lives during the call
// (shared memory from allocate_shared_floats: the in-place path), else a private vector.
void run_and_check(Communicator& comm, int64_t count, bool rank_order, unsigned seed, const std::string& label,
                   float* storage = nullptr) {
  std::vector<float> data = order_sensitive_data(count, seed + 7919u * static_cast<unsigned>(comm.rank()));
  const auto inputs = all_inputs(data);
  if (storage) {
    std::copy(data.begin(), data.end(), storage);
    allreduce_sum(comm, AllreduceAlgorithm::shm, storage, count);
    std::copy(storage, storage + count, data.begin());
  } else {
    allreduce_sum(comm, AllreduceAlgorithm::shm, data.data(), count);
  }
  const std::string what = label + ", count " + std::to_string(count) + " on " + std::to_string(comm.size()) +
                           " ranks, rank " + std::to_string(comm.rank());
  const Checked c = check_against_references(data, inputs);
  if (rank_order) EXPECT_EQ(c.not_rank_order, 0) << what << ": differs from the rank-order float sum";
  EXPECT_EQ(c.outside_tolerance, 0) << what << ": outside fp32 rounding of the double sum";
  expect_same_on_all_ranks(data, what);
}

// Around the 16-float part alignment and the 32..64-float buffers of the tests below; primes.
const int64_t kCounts[] = {0, 1, 2, 3, 5, 7, 13, 16, 17, 31, 47, 48, 49, 97, 1009, 4099};

}  // namespace

TEST(ShmAllreduce, OneNodeTopology) {
  auto comm = Communicator::world();
  const ShmTopology t = shm_topology(mpi_comm(*comm));
  EXPECT_EQ(t.nodes, 1);
  EXPECT_EQ(t.node_size, comm->size());
  EXPECT_EQ(t.node_rank, comm->rank());
  EXPECT_EQ(t.chunk_floats % 16, 0);
  EXPECT_GE(t.chunk_floats, shm_allreduce_settings().chunk_floats);
  EXPECT_EQ(t.buffers, shm_allreduce_settings().buffers);
}

// The window options runs and `bench allreduce` set (dist.shm_chunk_kb, dist.shm_buffers) reach
// the next communicator's window; the defaults are the measured 64 x 32 KiB.
TEST(ShmAllreduce, WindowOptionsSetTheWindow) {
  const ShmWindowOptions defaults = shm_window_options();
  EXPECT_EQ(defaults.chunk_bytes, 32 * 1024);
  EXPECT_EQ(defaults.buffers, 64);
  set_shm_window_options({4 * 1024, 3});
  auto comm = Communicator::world();
  const ShmTopology t = shm_topology(mpi_comm(*comm));
  EXPECT_EQ(t.chunk_floats, 1024);
  EXPECT_EQ(t.buffers, 3);
  for (int64_t count : {int64_t{1}, int64_t{4099}, int64_t{100003}}) run_and_check(*comm, count, true, 33u, "4 KiB x 3");
  set_shm_window_options(defaults);
}

// Default buffers; the largest count is several times the window, so it streams through it.
TEST(ShmAllreduce, DefaultChunksAreRankOrderSums) {
  auto comm = Communicator::world();
  const ShmTopology t = shm_topology(mpi_comm(*comm));
  const int64_t window = t.chunk_floats * t.buffers;
  for (int64_t count : {int64_t{0}, int64_t{1}, int64_t{13}, int64_t{65537}, 3 * window + 1009, int64_t{1000003}})
    run_and_check(*comm, count, true, 11u, "default chunk");
  // The same communicator again after a call on a different-length message and back.
  run_and_check(*comm, 3 * window + 1009, true, 12u, "default chunk, again");
}

// 48-float buffers, 1, 2 or 3 of them: every count above 48 crosses chunks (parts of 16
// floats, some empty), and ranks reuse buffers as soon as everyone is out of them.
// On 2 ranks both variants run: pair mode (each rank sums whole chunks) and reduce-scatter +
// all-gather (3 and 4 ranks always use the latter).
TEST(ShmAllreduce, SmallChunksAreRankOrderSums) {
  for (bool pair : {true, false}) {
    for (int buffers : {1, 2, 3}) {
      ShmAllreduceSettings s;
      s.chunk_floats = 48;
      s.buffers = buffers;
      s.pair_mode = pair;
      ScopedShmSettings scoped(s);
      auto comm = Communicator::world();
      EXPECT_EQ(shm_topology(mpi_comm(*comm)).chunk_floats, 48);
      EXPECT_EQ(shm_topology(mpi_comm(*comm)).buffers, buffers);
      const std::string label = std::string(pair ? "pair mode, " : "") + "chunk 48 x " + std::to_string(buffers);
      for (int64_t count : kCounts) run_and_check(*comm, count, true, 23u, label);
    }
  }
}

// Small integers: exact in any order, so shm equals MPI_Allreduce bit for bit.
TEST(ShmAllreduce, SmallIntegersEqualMpiAllreduce) {
  ShmAllreduceSettings s;
  s.chunk_floats = 64;
  ScopedShmSettings scoped(s);
  auto comm = Communicator::world();
  const int r = comm->rank();
  for (int64_t count : kCounts) {
    std::vector<float> data(static_cast<size_t>(count)), ref(static_cast<size_t>(count));
    for (int64_t i = 0; i < count; ++i) data[i] = static_cast<float>((i * 5 + r * 11) % 23) - 11.0f;
    if (count > 0)
      ASSERT_EQ(MPI_Allreduce(data.data(), ref.data(), static_cast<int>(count), MPI_FLOAT, MPI_SUM, MPI_COMM_WORLD),
                MPI_SUCCESS);
    allreduce_sum(*comm, AllreduceAlgorithm::shm, data.data(), count);
    for (int64_t i = 0; i < count; ++i) ASSERT_EQ(data[i], ref[i]) << "count " << count << ", element " << i;
  }
}

// A rank that yields on every idle poll gets the same bits.
TEST(ShmAllreduce, YieldingOnEveryPollAgrees) {
  ShmAllreduceSettings s;
  s.chunk_floats = 256;
  s.buffers = 2;
  s.polls_per_yield = 1;
  ScopedShmSettings scoped(s);
  auto comm = Communicator::world();
  EXPECT_EQ(shm_topology(mpi_comm(*comm)).polls_per_yield, 1);
  for (int64_t count : {int64_t{1}, int64_t{4099}, int64_t{100003}}) run_and_check(*comm, count, true, 77u, "yielding");
}

// One communicator, one window, calls of changing counts: the buffer rotation continues across
// calls (chunk counts not multiples of 3) and each call's partition differs from the last.
TEST(ShmAllreduce, RepeatedCallsWithChangingCounts) {
  for (bool pair : {true, false}) {
    ShmAllreduceSettings s;
    s.chunk_floats = 32;
    s.buffers = 3;
    s.pair_mode = pair;
    ScopedShmSettings scoped(s);
    auto comm = Communicator::world();
    const int64_t counts[] = {100, 1, 0, 33, 65, 7, 4099, 32, 64, 96, 97, 5, 2053, 0, 31, 1000};
    unsigned seed = 100;
    for (int round = 0; round < 3; ++round)
      for (int64_t count : counts)
        run_and_check(*comm, count, true, seed++, std::string(pair ? "pair mode, " : "") + "repeated, round " +
                                                      std::to_string(round));
  }
}

// Two fake nodes of ceil(n/2) consecutive ranks (n = 2: one rank each, so the node steps are
// empty and only the leaders' ring runs; n = 3: nodes of 2 and 1; n = 4: 2 and 2), then one
// rank per node: the hierarchical path on one machine.
TEST(ShmAllreduce, FakeNodesRunHierarchically) {
  const int n = world_size();
  for (int per_node : {(n + 1) / 2, 1}) {
    ShmAllreduceSettings s;
    s.chunk_floats = 48;
    s.buffers = 2;
    s.fake_ranks_per_node = per_node;
    ScopedShmSettings scoped(s);
    auto comm = Communicator::world();
    const ShmTopology t = shm_topology(mpi_comm(*comm));
    EXPECT_EQ(t.nodes, (n + per_node - 1) / per_node);
    EXPECT_EQ(t.node_rank, world_rank() % per_node);
    EXPECT_EQ(t.node_size, std::min(per_node, n - world_rank() / per_node * per_node));
    const std::string label = "fake nodes of " + std::to_string(per_node);
    for (int64_t count : kCounts) run_and_check(*comm, count, false, 57u, label);
    run_and_check(*comm, 100003, false, 91u, label);
    // Small integers: exact, so equal to the rank-order sum too.
    std::vector<float> data(1009);
    for (size_t i = 0; i < data.size(); ++i) data[i] = static_cast<float>((i + 3 * world_rank()) % 13);
    const auto inputs = all_inputs(data);
    allreduce_sum(*comm, AllreduceAlgorithm::shm, data.data(), static_cast<int64_t>(data.size()));
    EXPECT_EQ(check_against_references(data, inputs).not_rank_order, 0) << label;
  }
}

// Data in shared memory (allocate_shared_floats) on one node: the in-place path, at offsets 0
// and 17 floats into the region, counts from 0 to several 64 Ki-float steps, in turns with
// private-memory calls on the same communicator (both paths advance the same counters).
TEST(ShmAllreduce, SharedMemoryRunsInPlace) {
  auto comm = Communicator::world();
  const int64_t largest = 3 * (int64_t{1} << 16) + 1009;
  float* shared = allocate_shared_floats(*comm, largest + 17);
  ASSERT_NE(shared, nullptr);
  unsigned seed = 600;
  for (int64_t offset : {int64_t{0}, int64_t{17}}) {
    for (int64_t count : kCounts) {
      const std::string label = "in place at offset " + std::to_string(offset);
      run_and_check(*comm, count, true, seed++, label, shared + offset);
      run_and_check(*comm, count + 5, true, seed++, "private, between in-place calls");
    }
    run_and_check(*comm, largest, true, seed++, "in place, several steps", shared + offset);
  }
  // Small integers: equal to MPI_Allreduce bit for bit.
  const int r = comm->rank();
  std::vector<float> ref(static_cast<size_t>(largest));
  for (int64_t i = 0; i < largest; ++i) shared[i] = static_cast<float>((i * 7 + r * 3) % 19) - 9.0f;
  ASSERT_EQ(MPI_Allreduce(shared, ref.data(), static_cast<int>(largest), MPI_FLOAT, MPI_SUM, MPI_COMM_WORLD),
            MPI_SUCCESS);
  allreduce_sum(*comm, AllreduceAlgorithm::shm, shared, largest);
  for (int64_t i = 0; i < largest; ++i) ASSERT_EQ(shared[i], ref[i]) << "element " << i;
  // A second region on the same communicator.
  float* other = allocate_shared_floats(*comm, 4099);
  run_and_check(*comm, 4099, true, seed++, "in place, second region", other);
  run_and_check(*comm, 1000, true, seed++, "in place, first region again", shared);
}

// Several communicators, each with its own window, used in turn.
TEST(ShmAllreduce, CommunicatorsKeepTheirOwnWindows) {
  auto a = Communicator::world();
  auto b = Communicator::world();
  for (int i = 0; i < 3; ++i) {
    run_and_check(*a, 5000 + i, true, 300u + static_cast<unsigned>(i), "communicator a");
    run_and_check(*b, 77 + i, true, 400u + static_cast<unsigned>(i), "communicator b");
  }
  b.reset();  // frees b's window; a's stays usable
  run_and_check(*a, 123457, true, 500u, "communicator a after b freed");
}
