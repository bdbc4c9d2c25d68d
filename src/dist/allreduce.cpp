// All-reduce algorithms (see allreduce.h). Transfers larger than MPI's int count limit are
// cut into segments of at most kMpiMaxCount elements, each reduced by the chosen algorithm.
#include "dist/allreduce.h"

#include <algorithm>

#include "core/enum_names.h"
#include "core/error.h"
#include "dist/mpi_comm.h"
#include "dist/reduce_kernel.h"
#include "dist/request_wait.h"
#include "dist/shm_allreduce.h"
#ifdef TRAINSCALE_HAVE_NCCL
#include "dist/cuda/device_exchange.h"
#endif

namespace ts {
namespace {

constexpr int kTagRing = 101, kTagTree = 102, kTagButterfly = 103;

using A = AllreduceAlgorithm;
constexpr EnumName<A> kAlgorithms[] = {{A::mpi, "mpi"}, {A::ring, "ring"}, {A::tree, "tree"}, {A::ps, "ps"},
                                       {A::shm, "shm"}, {A::butterfly, "butterfly"}, {A::nccl, "nccl"}};

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
// Pipelined in slices of kRingSliceFloats: the 2 (n - 1) steps form one chain per slice (what a
// rank sends in step k + 1 is the slice it received, and in the reduce-scatter added, in step
// k), so slice j goes on as soon as it arrived instead of waiting for its whole chunk. The link
// then never idles between steps; without it a step's last bytes cross the network's queues
// before the next step starts (docs/multihost.md "All-reduce across hosts"). Every element is
// added in the same order as unsliced: the sums are bit-identical.
constexpr int kRingSliceFloats = 1 << 18;  // 1 MiB

struct RingPlan {
  int n = 1, r = 0, base = 0, extra = 0;
  int mod(int v) const { return ((v % n) + n) % n; }
  int begin(int c) const { return c * base + std::min(c, extra); }
  int size(int c) const { return base + (c < extra ? 1 : 0); }
  int slices(int c) const { return std::max(1, (size(c) + kRingSliceFloats - 1) / kRingSliceFloats); }
  int slice_size(int c, int j) const { return std::min(kRingSliceFloats, size(c) - j * kRingSliceFloats); }
  int steps() const { return 2 * (n - 1); }
  bool reduces(int k) const { return k < n - 1; }  // reduce-scatter steps add what they receive
  int send_chunk(int k) const { return reduces(k) ? mod(r - k) : mod(r + 1 - (k - (n - 1))); }
  int recv_chunk(int k) const { return reduces(k) ? mod(r - k - 1) : mod(r - (k - (n - 1))); }
};

void ring_segment(MPI_Comm mc, ScratchFloats& scratch, float* data, int count) {
  RingPlan p;
  TS_MPI(MPI_Comm_size(mc, &p.n));
  TS_MPI(MPI_Comm_rank(mc, &p.r));
  if (p.n == 1 || count == 0) return;
  p.base = count / p.n;
  p.extra = count % p.n;
  const int right = p.mod(p.r + 1), left = p.mod(p.r - 1);
  if (static_cast<int>(scratch.size()) < p.base + 1) scratch.resize(static_cast<size_t>(p.base + 1));
  float* recv = scratch.data();  // reduce-scatter slices land here (slot j), all-gather ones in place
  // The newest send from each (chunk, slice) of `data`: a receive into it waits for that send.
  std::vector<MPI_Request> sent(static_cast<size_t>(p.n * p.slices(0)), MPI_REQUEST_NULL);
  std::vector<MPI_Request> receiving(static_cast<size_t>(p.slices(0)), MPI_REQUEST_NULL);
  auto post_send = [&](int k, int j) {
    const int c = p.send_chunk(k);
    MPI_Request& slot = sent[static_cast<size_t>(c * p.slices(0) + j)];
    if (slot != MPI_REQUEST_NULL) wait_all_requests(1, &slot);
    TS_MPI(MPI_Isend(data + p.begin(c) + j * kRingSliceFloats, p.slice_size(c, j), MPI_FLOAT, right, kTagRing, mc,
                     &slot));
  };
  auto post_recv = [&](int k, int j) {
    const int c = p.recv_chunk(k);
    float* into = p.reduces(k) ? recv + j * kRingSliceFloats : data + p.begin(c) + j * kRingSliceFloats;
    if (!p.reduces(k)) {  // a send still reading this slice of data finishes first
      MPI_Request& pending = sent[static_cast<size_t>(c * p.slices(0) + j)];
      if (pending != MPI_REQUEST_NULL) wait_all_requests(1, &pending);
    }
    TS_MPI(MPI_Irecv(into, p.slice_size(c, j), MPI_FLOAT, left, kTagRing, mc, &receiving[static_cast<size_t>(j)]));
  };
  for (int j = 0; j < p.slices(p.recv_chunk(0)); ++j) post_recv(0, j);
  for (int j = 0; j < p.slices(p.send_chunk(0)); ++j) post_send(0, j);
  for (int k = 0; k < p.steps(); ++k) {
    const int c = p.recv_chunk(k), slices = p.slices(c);
    const bool last = k + 1 == p.steps();
    // Slices are taken in order, so sends and receives of one pair keep the order MPI matches.
    for (int j = 0; j < slices; ++j) {
      wait_all_requests(1, &receiving[static_cast<size_t>(j)]);
      if (p.reduces(k)) add_into(data + p.begin(c) + j * kRingSliceFloats, recv + j * kRingSliceFloats, p.slice_size(c, j));
      if (last) continue;
      post_send(k + 1, j);  // the chunk received in step k is the one sent in step k + 1
      if (j < p.slices(p.recv_chunk(k + 1))) post_recv(k + 1, j);
    }
    if (!last)
      for (int j = slices; j < p.slices(p.recv_chunk(k + 1)); ++j) post_recv(k + 1, j);
  }
  wait_all_requests(static_cast<int>(sent.size()), sent.data());
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
    recv_patiently(recv, count, MPI_FLOAT, r + m, kTagTree, mc);
    add_into(data, recv, count);
  }
  if (r != 0) {
    send_patiently(data, count, MPI_FLOAT, r - lowbit, kTagTree, mc);
    // Broadcast: the total comes back down from the parent.
    recv_patiently(data, count, MPI_FLOAT, r - lowbit, kTagTree, mc);
  }
  for (int m = lowbit >> 1; m >= 1; m >>= 1)
    if (r + m < n) send_patiently(data, count, MPI_FLOAT, r + m, kTagTree, mc);
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
    if (folded_out) send_patiently(data, count, MPI_FLOAT, r + 1, kTagButterfly, mc);
    else {
      recv_patiently(recv, count, MPI_FLOAT, r - 1, kTagButterfly, mc);
      add_into(data, recv, count);
    }
  }
  if (!folded_out) {
    const int index = r < 2 * rem ? r / 2 : r - rem;
    auto rank_of = [rem](int i) { return i < rem ? 2 * i + 1 : i + rem; };
    for (int distance = 1; distance < p2; distance *= 2) {
      const int partner = rank_of(index ^ distance);
      sendrecv_patiently(data, count, MPI_FLOAT, partner, kTagButterfly, recv, count, MPI_FLOAT, partner,
                         kTagButterfly, mc);
      add_into(data, recv, count);
    }
  }
  if (r < 2 * rem) {
    if (folded_out) recv_patiently(data, count, MPI_FLOAT, r + 1, kTagButterfly, mc);
    else send_patiently(data, count, MPI_FLOAT, r - 1, kTagButterfly, mc);
  }
}

// Parameter server: rank 0 gathers every rank's segment (n * count floats of scratch on rank
// 0), sums them in rank order and broadcasts the sum.
void ps_segment(Communicator& comm, float* data, int count, PsTimings& t) {
  const bool root = comm.rank() == 0;
  const MPI_Comm mc = mpi_comm(comm);
  const double t0 = now_s();
  // MPI_IN_PLACE: rank 0's own block (slot 0 of the receive buffer) is not transferred.
  float* all = root ? scratch_of(comm, static_cast<int64_t>(count) * comm.size()) : nullptr;
  TS_MPI(MPI_Gather(root ? MPI_IN_PLACE : data, count, MPI_FLOAT, all, count, MPI_FLOAT, 0, mc));
  const double t1 = now_s();
  if (root)
    for (int q = 1; q < comm.size(); ++q) add_into(data, all + static_cast<int64_t>(q) * count, count);
  const double t2 = now_s();
  t.gather_s += t1 - t0;
  if (root) t.average_s += t2 - t1;
  TS_MPI(MPI_Bcast(data, count, MPI_FLOAT, 0, mc));
  t.broadcast_s += now_s() - t2;
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

const char* allreduce_algorithm_name(AllreduceAlgorithm algorithm) { return name_in(kAlgorithms, algorithm); }

std::vector<AllreduceAlgorithm> all_allreduce_algorithms() {
  std::vector<AllreduceAlgorithm> host = values_in(kAlgorithms);
  host.pop_back();  // nccl reduces device memory
  return host;
}

std::vector<AllreduceAlgorithm> known_allreduce_algorithms() { return values_in(kAlgorithms); }

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
