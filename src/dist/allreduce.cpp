// All-reduce algorithms (see allreduce.h). Transfers larger than MPI's int count limit are
// cut into segments of at most kMpiMaxCount elements, each reduced by the chosen algorithm.
#include "dist/allreduce.h"

#include <algorithm>
#include <chrono>

#include "core/error.h"
#include "dist/mpi_comm.h"
#include "dist/reduce_kernel.h"
#include "dist/shm_allreduce.h"
#ifdef TRAINSCALE_HAVE_NCCL
#include "dist/cuda/device_exchange.h"
#endif

namespace ts {
namespace {

constexpr int kTagRing = 101, kTagTree = 102, kTagButterfly = 103;

double now_s() { return MPI_Wtime(); }

float* scratch_of(Communicator& comm, int64_t count) {
  auto& scratch = CommunicatorAccess::impl(comm).scratch;
  if (static_cast<int64_t>(scratch.size()) < count) scratch.resize(static_cast<size_t>(count));
  return scratch.data();
}

// Ring: the segment is cut into n chunks as equal as possible (the first count % n chunks
// hold one element more). Reduce-scatter: in step s, rank r sends chunk (r - s) to r + 1 and
// adds chunk (r - s - 1) received from r - 1; after n - 1 steps rank r holds the full sum of
// chunk (r + 1). All-gather: the reduced chunks travel once more around the ring.
// Each rank sends 2 (n - 1) / n of the data.
void ring_segment(MPI_Comm mc, ScratchFloats& scratch, float* data, int count) {
  int n = 1, r = 0;
  TS_MPI(MPI_Comm_size(mc, &n));
  TS_MPI(MPI_Comm_rank(mc, &r));
  const int base = count / n, extra = count % n;
  auto chunk_begin = [&](int c) { return c * base + std::min(c, extra); };
  auto chunk_size = [&](int c) { return base + (c < extra ? 1 : 0); };
  auto mod = [n](int v) { return ((v % n) + n) % n; };
  const int right = mod(r + 1), left = mod(r - 1);
  if (static_cast<int>(scratch.size()) < base + 1) scratch.resize(static_cast<size_t>(base + 1));
  float* recv = scratch.data();
  for (int s = 0; s < n - 1; ++s) {
    const int send_c = mod(r - s), recv_c = mod(r - s - 1);
    TS_MPI(MPI_Sendrecv(data + chunk_begin(send_c), chunk_size(send_c), MPI_FLOAT, right, kTagRing,
                        recv, chunk_size(recv_c), MPI_FLOAT, left, kTagRing, mc, MPI_STATUS_IGNORE));
    add_into(data + chunk_begin(recv_c), recv, chunk_size(recv_c));
  }
  for (int s = 0; s < n - 1; ++s) {
    const int send_c = mod(r + 1 - s), recv_c = mod(r - s);
    TS_MPI(MPI_Sendrecv(data + chunk_begin(send_c), chunk_size(send_c), MPI_FLOAT, right, kTagRing,
                        data + chunk_begin(recv_c), chunk_size(recv_c), MPI_FLOAT, left, kTagRing, mc,
                        MPI_STATUS_IGNORE));
  }
}

// Binomial tree rooted at rank 0. Rank r's parent is r - lowbit(r); its children are r + m for
// m = lowbit(r)/2, ..., 2, 1 (rank 0: every power of two below n). Reduce walks up, broadcast
// walks down the same tree: 2 ceil(log2 n) message steps of the full segment.
void tree_segment(Communicator& comm, float* data, int count) {
  const int n = comm.size(), r = comm.rank();
  const MPI_Comm mc = mpi_comm(comm);
  int top = 1;
  while (top < n) top <<= 1;
  const int lowbit = r == 0 ? top : (r & -r);
  float* recv = scratch_of(comm, count);
  // Reduce: children in increasing distance (1, 2, 4, ...), then send the partial sum up.
  for (int m = 1; m < lowbit; m <<= 1) {
    if (r + m >= n) continue;
    TS_MPI(MPI_Recv(recv, count, MPI_FLOAT, r + m, kTagTree, mc, MPI_STATUS_IGNORE));
    add_into(data, recv, count);
  }
  if (r != 0) {
    TS_MPI(MPI_Send(data, count, MPI_FLOAT, r - lowbit, kTagTree, mc));
    // Broadcast: the total comes back down from the parent.
    TS_MPI(MPI_Recv(data, count, MPI_FLOAT, r - lowbit, kTagTree, mc, MPI_STATUS_IGNORE));
  }
  for (int m = lowbit >> 1; m >= 1; m >>= 1)
    if (r + m < n) TS_MPI(MPI_Send(data, count, MPI_FLOAT, r + m, kTagTree, mc));
}

// Butterfly (recursive doubling) over the largest power of two p2 <= n ranks. With
// rem = n - p2, ranks below 2 rem fold first: each even one sends its segment to the odd one
// above it and sits out. The p2 remaining ranks (index r / 2 below 2 rem, r - rem above) then
// exchange the whole segment with the partner at index distance 1, 2, 4, ..., p2 / 2 and add
// it: log2(p2) steps. Finally each odd rank of the fold sends the total back to its even
// neighbour. Float addition is commutative, so both partners of a step hold the same bits and
// every rank ends with the same sum.
void butterfly_segment(Communicator& comm, float* data, int count) {
  const int n = comm.size(), r = comm.rank();
  const MPI_Comm mc = mpi_comm(comm);
  int p2 = 1;
  while (p2 * 2 <= n) p2 *= 2;
  const int rem = n - p2;
  const bool folded_out = r < 2 * rem && r % 2 == 0;
  float* recv = scratch_of(comm, count);
  if (r < 2 * rem) {
    if (folded_out) TS_MPI(MPI_Send(data, count, MPI_FLOAT, r + 1, kTagButterfly, mc));
    else {
      TS_MPI(MPI_Recv(recv, count, MPI_FLOAT, r - 1, kTagButterfly, mc, MPI_STATUS_IGNORE));
      add_into(data, recv, count);
    }
  }
  if (!folded_out) {
    const int index = r < 2 * rem ? r / 2 : r - rem;
    auto rank_of = [rem](int i) { return i < rem ? 2 * i + 1 : i + rem; };
    for (int distance = 1; distance < p2; distance *= 2) {
      const int partner = rank_of(index ^ distance);
      TS_MPI(MPI_Sendrecv(data, count, MPI_FLOAT, partner, kTagButterfly, recv, count, MPI_FLOAT, partner,
                          kTagButterfly, mc, MPI_STATUS_IGNORE));
      add_into(data, recv, count);
    }
  }
  if (r < 2 * rem) {
    if (folded_out) TS_MPI(MPI_Recv(data, count, MPI_FLOAT, r + 1, kTagButterfly, mc, MPI_STATUS_IGNORE));
    else TS_MPI(MPI_Send(data, count, MPI_FLOAT, r - 1, kTagButterfly, mc));
  }
}

// Parameter server: rank 0 gathers every rank's segment (n * count floats of scratch on rank
// 0), sums them in rank order and broadcasts the sum.
void ps_segment(Communicator& comm, float* data, int count, PsTimings& t) {
  const int n = comm.size(), r = comm.rank();
  const MPI_Comm mc = mpi_comm(comm);
  double t0 = now_s();
  if (r == 0) {
    // MPI_IN_PLACE: rank 0's own block (slot 0 of the receive buffer) is not transferred.
    float* all = scratch_of(comm, static_cast<int64_t>(count) * n);
    TS_MPI(MPI_Gather(MPI_IN_PLACE, count, MPI_FLOAT, all, count, MPI_FLOAT, 0, mc));
    double t1 = now_s();
    for (int q = 1; q < n; ++q) add_into(data, all + static_cast<int64_t>(q) * count, count);
    double t2 = now_s();
    t.gather_s += t1 - t0;
    t.average_s += t2 - t1;
    t0 = t2;
  } else {
    TS_MPI(MPI_Gather(data, count, MPI_FLOAT, nullptr, count, MPI_FLOAT, 0, mc));
    double t1 = now_s();
    t.gather_s += t1 - t0;
    t0 = t1;
  }
  TS_MPI(MPI_Bcast(data, count, MPI_FLOAT, 0, mc));
  t.broadcast_s += now_s() - t0;
}

}  // namespace

AllreduceAlgorithm parse_allreduce_algorithm(const std::string& name) {
  std::string names;
  for (AllreduceAlgorithm a : known_allreduce_algorithms()) {
    if (name == allreduce_algorithm_name(a)) return a;
    names += (names.empty() ? "" : ", ") + std::string(allreduce_algorithm_name(a));
  }
  throw ConfigError("unknown all-reduce algorithm '" + name + "'; accepted: " + names);
}

const char* allreduce_algorithm_name(AllreduceAlgorithm algorithm) {
  switch (algorithm) {
    case AllreduceAlgorithm::mpi: return "mpi";
    case AllreduceAlgorithm::ring: return "ring";
    case AllreduceAlgorithm::tree: return "tree";
    case AllreduceAlgorithm::ps: return "ps";
    case AllreduceAlgorithm::shm: return "shm";
    case AllreduceAlgorithm::butterfly: return "butterfly";
    case AllreduceAlgorithm::nccl: return "nccl";
  }
  return "?";
}

std::vector<AllreduceAlgorithm> all_allreduce_algorithms() {
  return {AllreduceAlgorithm::mpi, AllreduceAlgorithm::ring, AllreduceAlgorithm::tree, AllreduceAlgorithm::ps,
          AllreduceAlgorithm::shm, AllreduceAlgorithm::butterfly};
}

std::vector<AllreduceAlgorithm> known_allreduce_algorithms() {
  std::vector<AllreduceAlgorithm> all = all_allreduce_algorithms();
  all.push_back(AllreduceAlgorithm::nccl);
  return all;
}

bool allreduce_algorithm_built(AllreduceAlgorithm algorithm) {
#ifdef TRAINSCALE_HAVE_NCCL
  return true;
#else
  return algorithm != AllreduceAlgorithm::nccl;
#endif
}

std::string allreduce_algorithm_missing_reason(AllreduceAlgorithm algorithm) {
  return allreduce_algorithm_built(algorithm) ? "" : "nccl needs the cuda backend, which this build lacks";
}

std::string allreduce_algorithm_unavailable_reason(AllreduceAlgorithm algorithm) {
  if (!allreduce_algorithm_built(algorithm)) return allreduce_algorithm_missing_reason(algorithm);
#ifdef TRAINSCALE_HAVE_NCCL
  if (algorithm == AllreduceAlgorithm::nccl) return nccl_device_missing_reason();
#endif
  return "";
}

float* allocate_shared_floats(Communicator& comm, int64_t count) {
  ExchangeGuard guard(watchdog_of(comm), "the set-up of a shared-memory window");
  return shm_allocate(mpi_comm(comm), count);
}

int allreduce_node_count(Communicator& comm) {
  ExchangeGuard guard(watchdog_of(comm), "the set-up of shm's shared-memory window");
  return shm_topology(mpi_comm(comm)).nodes;
}

void set_shm_window_options(const ShmWindowOptions& options) {
  ShmAllreduceSettings s = shm_allreduce_settings();
  s.chunk_floats = std::max<int64_t>(1, options.chunk_bytes / static_cast<int64_t>(sizeof(float)));
  s.buffers = std::max(1, options.buffers);
  set_shm_allreduce_settings(s);
}

ShmWindowOptions shm_window_options() {
  const ShmAllreduceSettings s = shm_allreduce_settings();
  return {s.chunk_floats * static_cast<int64_t>(sizeof(float)), s.buffers};
}

void allreduce_sum(Communicator& comm, AllreduceAlgorithm algorithm, float* data, int64_t count,
                   PsTimings* ps_timings) {
  TS_CHECK(count >= 0, "allreduce_sum: negative element count " + std::to_string(count));
  if (!allreduce_algorithm_built(algorithm))
    throw ConfigError(std::string("all-reduce ") + allreduce_algorithm_name(algorithm) + ": " +
                      allreduce_algorithm_missing_reason(algorithm));
  if (algorithm == AllreduceAlgorithm::nccl)
    throw RuntimeError("allreduce_sum: nccl reduces GPU memory, and allreduce_sum takes host memory; the exchange "
                       "strategies and `bench allreduce` run nccl on device buffers");
  PsTimings t;
  ExchangeGuard guard(watchdog_of(comm), "the all-reduce of dist.allreduce");
  if (comm.size() > 1 && algorithm == AllreduceAlgorithm::shm) {
    // Streams through a fixed window in chunks: no MPI count limit. Across nodes, the node
    // leaders run the ring (segmented like the other algorithms).
    ScratchFloats& scratch = CommunicatorAccess::impl(comm).scratch;
    shm_allreduce_sum(mpi_comm(comm), data, count, [&scratch](MPI_Comm leaders, float* d, int64_t c) {
      for (int64_t off = 0; off < c; off += kMpiMaxCount)
        ring_segment(leaders, scratch, d + off, static_cast<int>(std::min(kMpiMaxCount, c - off)));
    });
  } else if (comm.size() > 1) {
    // ps gathers n segments into one buffer on rank 0: keep that buffer within the int limit too.
    const int64_t segment = algorithm == AllreduceAlgorithm::ps ? std::max<int64_t>(1, kMpiMaxCount / comm.size())
                                                                : kMpiMaxCount;
    for (int64_t off = 0; off < count; off += segment) {
      const int n = static_cast<int>(std::min(segment, count - off));
      float* seg = data + off;
      switch (algorithm) {
        case AllreduceAlgorithm::mpi:
          mpi_allreduce_sum_in_place(mpi_comm(comm), seg, n);
          break;
        case AllreduceAlgorithm::ring:
          ring_segment(mpi_comm(comm), CommunicatorAccess::impl(comm).scratch, seg, n);
          break;
        case AllreduceAlgorithm::tree: tree_segment(comm, seg, n); break;
        case AllreduceAlgorithm::ps: ps_segment(comm, seg, n, t); break;
        case AllreduceAlgorithm::butterfly: butterfly_segment(comm, seg, n); break;
        case AllreduceAlgorithm::shm:  // handled above
        case AllreduceAlgorithm::nccl: break;  // refused above
      }
    }
  }
  if (ps_timings) *ps_timings = t;
}

}  // namespace ts
