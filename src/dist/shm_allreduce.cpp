// The shared-memory all-reduce (see shm_allreduce.h for the algorithm).
#include "dist/shm_allreduce.h"

#include <sched.h>

#include <algorithm>
#include <atomic>
#include <cstdlib>
#include <cstring>
#include <mutex>
#include <string>
#include <vector>

#if defined(__x86_64__) || defined(__i386__)
#include <immintrin.h>
#endif

#include "core/error.h"
#include "dist/mpi_comm.h"

namespace ts {
namespace {

constexpr int kBuffers = 3;            // pipeline depth: copy-in, reduce, copy-out in flight
constexpr int64_t kAlignFloats = 16;   // parts and buffers start on 64-byte cache lines
constexpr int64_t kHeaderBytes = 256;  // the rank's barrier counter, alone on its cache lines

int64_t round_up(int64_t v, int64_t m) { return (v + m - 1) / m * m; }

void cpu_relax() {
#if defined(__x86_64__) || defined(__i386__)
  _mm_pause();
#endif
}

// ---- settings ---------------------------------------------------------------------------

std::mutex g_settings_mutex;
ShmAllreduceSettings g_settings = [] {
  ShmAllreduceSettings s;
  // TRAINSCALE_SHM_CHUNK_BYTES (docs/distributed.md) tunes the buffer size without a rebuild.
  if (const char* env = std::getenv("TRAINSCALE_SHM_CHUNK_BYTES")) {
    char* end = nullptr;
    const long long v = std::strtoll(env, &end, 10);
    if (end && *end == '\0' && v >= 64 && v <= (int64_t{1} << 30)) s.chunk_floats = v / 4;
  }
  return s;
}();

// ---- per-communicator state, cached as an attribute of the MPI_Comm -----------------------

struct ShmState {
  MPI_Comm node = MPI_COMM_NULL;     // the ranks of this rank's node
  MPI_Comm leaders = MPI_COMM_NULL;  // node rank 0 of every node (MPI_COMM_NULL elsewhere)
  int node_rank = 0, node_size = 1, nodes = 1;
  MPI_Win win = MPI_WIN_NULL;
  std::vector<char*> segment;  // every node rank's segment, mapped in this process
  int64_t chunk = 0;           // floats per buffer
  uint64_t epoch = 0;          // barriers passed (the same on every node rank)
  uint64_t next_buffer = 0;    // buffers rotate across calls (see run_pipeline)

  uint64_t* counter(int q) const { return reinterpret_cast<uint64_t*>(segment[static_cast<size_t>(q)]); }
  float* buffer(int q, uint64_t b) const {
    return reinterpret_cast<float*>(segment[static_cast<size_t>(q)] + kHeaderBytes) + static_cast<int64_t>(b) * chunk;
  }
};

void destroy_state(ShmState* s) {
  if (s->win != MPI_WIN_NULL) {
    MPI_Win_unlock_all(s->win);
    MPI_Win_free(&s->win);
  }
  if (s->leaders != MPI_COMM_NULL) MPI_Comm_free(&s->leaders);
  if (s->node != MPI_COMM_NULL) MPI_Comm_free(&s->node);
  delete s;
}

int delete_state_attr(MPI_Comm, int, void* value, void*) {
  destroy_state(static_cast<ShmState*>(value));
  return MPI_SUCCESS;
}

int state_keyval() {
  static std::once_flag once;
  static int keyval = MPI_KEYVAL_INVALID;
  std::call_once(once, [] {
    TS_MPI(MPI_Comm_create_keyval(MPI_COMM_NULL_COPY_FN, delete_state_attr, &keyval, nullptr));
  });
  return keyval;
}

ShmState* create_state(MPI_Comm comm) {
  const ShmAllreduceSettings settings = shm_allreduce_settings();
  int rank = 0, size = 1;
  TS_MPI(MPI_Comm_rank(comm, &rank));
  TS_MPI(MPI_Comm_size(comm, &size));
  auto* s = new ShmState();
  try {
    if (settings.fake_ranks_per_node > 0)
      TS_MPI(MPI_Comm_split(comm, rank / settings.fake_ranks_per_node, rank, &s->node));
    else
      TS_MPI(MPI_Comm_split_type(comm, MPI_COMM_TYPE_SHARED, rank, MPI_INFO_NULL, &s->node));
    MPI_Comm_set_errhandler(s->node, MPI_ERRORS_RETURN);
    TS_MPI(MPI_Comm_rank(s->node, &s->node_rank));
    TS_MPI(MPI_Comm_size(s->node, &s->node_size));
    const int is_leader = s->node_rank == 0 ? 1 : 0;
    TS_MPI(MPI_Allreduce(&is_leader, &s->nodes, 1, MPI_INT, MPI_SUM, comm));
    if (s->nodes > 1) {
      TS_MPI(MPI_Comm_split(comm, is_leader ? 0 : MPI_UNDEFINED, rank, &s->leaders));
      if (s->leaders != MPI_COMM_NULL) MPI_Comm_set_errhandler(s->leaders, MPI_ERRORS_RETURN);
    }
    s->chunk = round_up(std::max<int64_t>(settings.chunk_floats, kAlignFloats), kAlignFloats);
    if (s->node_size > 1) {
      const MPI_Aint bytes = static_cast<MPI_Aint>(kHeaderBytes + kBuffers * s->chunk * static_cast<int64_t>(sizeof(float)));
      MPI_Info info;
      TS_MPI(MPI_Info_create(&info));
      // Each rank's segment on its own pages (first touch by its owner: NUMA-local).
      MPI_Info_set(info, "alloc_shared_noncontig", "true");
      char* mine = nullptr;
      const int rc = MPI_Win_allocate_shared(bytes, 1, info, s->node, &mine, &s->win);
      MPI_Info_free(&info);
      TS_MPI(rc);
      TS_MPI(MPI_Win_lock_all(MPI_MODE_NOCHECK, s->win));
      std::memset(mine, 0, static_cast<size_t>(bytes));
      s->segment.resize(static_cast<size_t>(s->node_size));
      for (int q = 0; q < s->node_size; ++q) {
        MPI_Aint qbytes = 0;
        int disp = 0;
        char* base = nullptr;
        TS_MPI(MPI_Win_shared_query(s->win, q, &qbytes, &disp, &base));
        TS_CHECK(qbytes >= bytes && base != nullptr,
                 "shm all-reduce: node rank " + std::to_string(q) + "'s shared segment is missing or too small");
        s->segment[static_cast<size_t>(q)] = base;
      }
      TS_MPI(MPI_Win_sync(s->win));
      TS_MPI(MPI_Barrier(s->node));  // every counter is zero before anyone uses it
      TS_MPI(MPI_Win_sync(s->win));
    }
  } catch (...) {
    destroy_state(s);
    throw;
  }
  return s;
}

ShmState& state_of(MPI_Comm comm) {
  const int keyval = state_keyval();
  void* value = nullptr;
  int found = 0;
  TS_MPI(MPI_Comm_get_attr(comm, keyval, &value, &found));
  if (found) return *static_cast<ShmState*>(value);
  ShmState* s = create_state(comm);
  const int rc = MPI_Comm_set_attr(comm, keyval, s);
  if (rc != MPI_SUCCESS) {
    destroy_state(s);
    TS_MPI(rc);
  }
  return *s;
}

// ---- synchronisation ----------------------------------------------------------------------

// All node ranks arrive before any leaves: each publishes its barrier count (release), then
// waits for every other rank's count to reach it (acquire), so every write before the barrier
// on any rank is visible after it. Spins briefly, then yields the core (ranks may outnumber
// cores).
void node_barrier(ShmState& s) {
  const uint64_t target = ++s.epoch;
  std::atomic_ref<uint64_t>(*s.counter(s.node_rank)).store(target, std::memory_order_release);
  for (int q = 0; q < s.node_size; ++q) {
    if (q == s.node_rank) continue;
    std::atomic_ref<uint64_t> other(*s.counter(q));
    for (int spins = 0; other.load(std::memory_order_acquire) < target; ++spins) {
      if (spins < 4096) cpu_relax();
      else sched_yield();
    }
  }
}

// ---- the arithmetic -----------------------------------------------------------------------

// out[i] = a[i] + b[i]; out never aliases a or b (it is the reducer's own buffer part).
void add2(float* __restrict out, const float* a, const float* b, int64_t count) {
  for (int64_t i = 0; i < count; ++i) out[i] = a[i] + b[i];
}
// out[i] += a[i]
void add_into(float* __restrict out, const float* a, int64_t count) {
  for (int64_t i = 0; i < count; ++i) out[i] += a[i];
}

// Part q of a chunk of `len` floats split over n ranks: [begin, end), 16-float aligned, the
// last parts possibly empty.
struct Part {
  int64_t begin, end;
  int64_t size() const { return end - begin; }
};
Part part_of(int64_t len, int n, int q) {
  const int64_t per = round_up((len + n - 1) / n, kAlignFloats);
  return {std::min(len, per * q), std::min(len, per * (q + 1))};
}

void copy(float* dst, const float* src, int64_t count) {
  if (count > 0) std::memcpy(dst, src, static_cast<size_t>(count) * sizeof(float));
}

enum class Mode {
  allreduce,  // every node rank ends with the node sum
  reduce,     // node rank 0 ends with the node sum (other ranks' data: partial, to be overwritten)
  broadcast,  // every node rank ends with node rank 0's data
};

// Streams `count` floats through the buffers, kBuffers chunks in flight. Step t copies chunk
// t in, reduces chunk t-1 and copies chunk t-2 out, then the node barrier; the last step needs
// no barrier of its own. Chunk k uses buffer (first + k) % kBuffers where `first` continues
// from the previous call, so a call's first two steps never write the buffer the previous
// call's last (unfenced) step may still be reading; every other reuse of a buffer is at
// least one barrier after its last read.
void run_pipeline(ShmState& s, Mode mode, float* data, int64_t count) {
  const int n = s.node_size, r = s.node_rank;
  const int64_t chunks = (count + s.chunk - 1) / s.chunk;
  const uint64_t first = s.next_buffer;
  s.next_buffer = (first + static_cast<uint64_t>(chunks)) % kBuffers;
  auto chunk_len = [&](int64_t k) { return std::min(s.chunk, count - k * s.chunk); };
  auto buf = [&](int64_t k) { return (first + static_cast<uint64_t>(k)) % kBuffers; };
  const int64_t steps = mode == Mode::broadcast ? chunks + 1 : chunks + 2;

  for (int64_t t = 0; t < steps; ++t) {
    if (mode == Mode::broadcast) {
      const int64_t out = t - 1;  // copy-out: the other ranks take chunk t-1 from rank 0
      if (r != 0 && out >= 0) copy(data + out * s.chunk, s.buffer(0, buf(out)), chunk_len(out));
      if (r == 0 && t < chunks) copy(s.buffer(0, buf(t)), data + t * s.chunk, chunk_len(t));
    } else {
      const int64_t out = t - 2;
      if (out >= 0 && (mode == Mode::allreduce || r == 0)) {
        const int64_t len = chunk_len(out);
        float* d = data + out * s.chunk;
        for (int q = 0; q < n; ++q) {
          if (q == r) continue;
          const Part p = part_of(len, n, q);
          copy(d + p.begin, s.buffer(q, buf(out)) + p.begin, p.size());
        }
      }
      const int64_t red = t - 1;
      if (red >= 0 && red < chunks) {
        const int64_t len = chunk_len(red);
        const Part p = part_of(len, n, r);
        if (p.size() > 0) {
          float* d = data + red * s.chunk + p.begin;
          float* mine = s.buffer(r, buf(red)) + p.begin;
          auto src = [&](int q) -> const float* { return q == r ? d : s.buffer(q, buf(red)) + p.begin; };
          add2(mine, src(0), src(1), p.size());
          for (int q = 2; q < n; ++q) add_into(mine, src(q), p.size());
          copy(d, mine, p.size());
        }
      }
      if (t < chunks) {
        const int64_t len = chunk_len(t);
        const Part p = part_of(len, n, r);
        float* b = s.buffer(r, buf(t));
        const float* d = data + t * s.chunk;
        copy(b, d, p.begin);
        copy(b + p.end, d + p.end, len - p.end);
      }
    }
    if (t + 1 < steps) node_barrier(s);
  }
}

}  // namespace

void set_shm_allreduce_settings(const ShmAllreduceSettings& settings) {
  std::lock_guard<std::mutex> lock(g_settings_mutex);
  g_settings = settings;
}

ShmAllreduceSettings shm_allreduce_settings() {
  std::lock_guard<std::mutex> lock(g_settings_mutex);
  return g_settings;
}

ShmTopology shm_topology(MPI_Comm comm) {
  const ShmState& s = state_of(comm);
  return {s.nodes, s.node_rank, s.node_size, s.chunk};
}

void shm_allreduce_sum(MPI_Comm comm, float* data, int64_t count, const CrossNodeAllreduce& across_nodes) {
  TS_CHECK(count >= 0, "shm all-reduce: negative element count " + std::to_string(count));
  ShmState& s = state_of(comm);
  if (count == 0) return;
  if (s.nodes == 1) {
    if (s.node_size > 1) run_pipeline(s, Mode::allreduce, data, count);
    return;
  }
  if (s.node_size > 1) run_pipeline(s, Mode::reduce, data, count);
  if (s.leaders != MPI_COMM_NULL) across_nodes(s.leaders, data, count);
  if (s.node_size > 1) run_pipeline(s, Mode::broadcast, data, count);
}

}  // namespace ts
