// The shared-memory all-reduce (see shm_allreduce.h for the algorithm).
#include "dist/shm_allreduce.h"

#include <sched.h>
#include <unistd.h>

#include <algorithm>
#include <atomic>
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

constexpr int64_t kAlignFloats = 16;   // parts and buffers start on 64-byte cache lines
constexpr int64_t kHeaderBytes = 512;  // the rank's progress counters etc., each on its own cache line
constexpr int64_t kInPlaceChunkFloats = int64_t{1} << 16;  // 256 KiB steps of the in-place path
constexpr int64_t kNodeWindowBytes = int64_t{32} << 20;  // buffers of all ranks of a node, at most

int64_t round_up(int64_t v, int64_t m) { return (v + m - 1) / m * m; }

// ---- settings ---------------------------------------------------------------------------

// Set by the trainer from the run config (dist.shm_chunk_kb, dist.shm_buffers), by `bench
// allreduce` from its flags and by tests; nothing else changes them.
std::mutex g_settings_mutex;
ShmAllreduceSettings g_settings;

// ---- per-communicator state, cached as an attribute of the MPI_Comm -----------------------

// A rank's progress, published in its segment's header: how many chunks (counted over every
// shm call on the communicator, so the counts only grow) it has copied in, reduced and copied
// out. Written only by the owner (release), read by the others (acquire).
enum Counter { kIn = 0, kReduced = 1, kOut = 2 };

// Every rank's header also says, for its latest call, where its data lies (in-place path): the
// call's number (1, 2, ... per communicator; written last, with release), the shared region
// (-1: private memory, the copy pipeline), the float offset in it and the element count.
constexpr int64_t kCallOffset = 4 * 64;
struct CallInfo {
  std::atomic<uint64_t> call;
  int64_t region, offset, count;
};
static_assert(kCallOffset + static_cast<int64_t>(sizeof(CallInfo)) <= kHeaderBytes, "header too small");

struct ShmState {
  MPI_Comm node = MPI_COMM_NULL;     // the ranks of this rank's node
  MPI_Comm leaders = MPI_COMM_NULL;  // node rank 0 of every node (MPI_COMM_NULL elsewhere)
  int node_rank = 0, node_size = 1, nodes = 1;
  MPI_Win win = MPI_WIN_NULL;
  std::vector<char*> segment;  // every node rank's segment, mapped in this process
  int64_t chunk = 0;           // floats per buffer
  int buffers = 0;             // buffers per rank: chunks in flight
  uint64_t sequence = 0;       // chunks started so far (the same on every node rank)
  uint64_t calls = 0;          // shm calls so far (the same on every node rank)
  // Memory registered by shm_allocate: each one a window of its own; base[q] = rank q's part.
  struct Region {
    MPI_Win win = MPI_WIN_NULL;
    int64_t floats = 0;  // per rank
    std::vector<float*> base;
  };
  std::vector<Region> regions;
  int polls_per_yield = 1;  // idle polls between sched_yield calls (ShmAllreduceSettings)
  bool pair = false;        // two node ranks: Mode::pair instead of reduce-scatter + all-gather

  uint64_t* counter(int q, Counter c) const {
    return reinterpret_cast<uint64_t*>(segment[static_cast<size_t>(q)]) + c * 8;  // one cache line each
  }
  float* buffer(int q, uint64_t chunk_seq) const {
    return reinterpret_cast<float*>(segment[static_cast<size_t>(q)] + kHeaderBytes) +
           static_cast<int64_t>(chunk_seq % static_cast<uint64_t>(buffers)) * chunk;
  }
  uint64_t load(int q, Counter c) const {
    return std::atomic_ref<uint64_t>(*counter(q, c)).load(std::memory_order_acquire);
  }
  CallInfo& call_info(int q) const { return *reinterpret_cast<CallInfo*>(segment[static_cast<size_t>(q)] + kCallOffset); }
  void publish(Counter c, uint64_t value) const {
    std::atomic_ref<uint64_t>(*counter(node_rank, c)).store(value, std::memory_order_release);
  }
  // Rank q's counter c >= value. Counters only grow, so the last value read stays a valid
  // lower bound: the other rank's cache line is read again only when that is not enough
  // (fewer cache-line transfers between cores than polling it on every check).
  bool reached(int q, Counter c, uint64_t value) {
    uint64_t& last = seen[static_cast<size_t>(q) * 3 + c];
    if (last >= value) return true;
    last = load(q, c);
    return last >= value;
  }
  // Every node rank (but `skip`) has counter c >= value.
  bool all_reached(Counter c, uint64_t value, int skip = -1) {
    for (int q = 0; q < node_size; ++q)
      if (q != skip && !reached(q, c, value)) return false;
    return true;
  }
  std::vector<uint64_t> seen;  // last value read of every rank's counters
};

void destroy_state(ShmState* s) {
  for (ShmState::Region& region : s->regions) {
    MPI_Win_unlock_all(region.win);
    MPI_Win_free(&region.win);
  }
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

// A window of `bytes` per rank over `node`, locked for shared access, this rank's part zeroed
// before any rank reads it (collective). Returns every node rank's part as mapped here.
std::vector<char*> allocate_shared_window(MPI_Comm node, int64_t bytes, MPI_Win* win, const char* advice) {
  int node_size = 1;
  TS_MPI(MPI_Comm_size(node, &node_size));
  MPI_Info info;
  TS_MPI(MPI_Info_create(&info));
  // Each rank's part on its own pages (first touch by its owner: NUMA-local).
  MPI_Info_set(info, "alloc_shared_noncontig", "true");
  char* mine = nullptr;
  const int rc = MPI_Win_allocate_shared(static_cast<MPI_Aint>(bytes), 1, info, node, &mine, win);
  MPI_Info_free(&info);
  if (rc != MPI_SUCCESS) {
    try {
      TS_MPI(rc);
    } catch (const RuntimeError& e) {
      throw RuntimeError(std::string(e.what()) + "; the shm all-reduce needs " + std::to_string(bytes) +
                         " bytes of shared memory (/dev/shm) per rank on " + std::to_string(node_size) +
                         " ranks of this node: enlarge /dev/shm, " + advice);
    }
  }
  TS_MPI(MPI_Win_lock_all(MPI_MODE_NOCHECK, *win));
  if (bytes > 0) std::memset(mine, 0, static_cast<size_t>(bytes));
  std::vector<char*> parts(static_cast<size_t>(node_size));
  for (int q = 0; q < node_size; ++q) {
    MPI_Aint qbytes = 0;
    int disp = 0;
    char* base = nullptr;
    TS_MPI(MPI_Win_shared_query(*win, q, &qbytes, &disp, &base));
    TS_CHECK(qbytes >= bytes && base != nullptr,
             "shm all-reduce: node rank " + std::to_string(q) + "'s shared segment is missing or too small");
    parts[static_cast<size_t>(q)] = base;
  }
  TS_MPI(MPI_Win_sync(*win));
  TS_MPI(MPI_Barrier(node));  // every part is zeroed before anyone reads it
  TS_MPI(MPI_Win_sync(*win));
  return parts;
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
    s->buffers = std::max(1, settings.buffers);
    s->pair = settings.pair_mode;
    // Many ranks on a node share a window budget (containers often have a small /dev/shm):
    // above kNodeWindowBytes in all, the chunks shrink (not below 16 KiB).
    const int64_t budget_floats = kNodeWindowBytes / 4 / s->node_size / s->buffers;
    const int64_t chunk = std::min(settings.chunk_floats, std::max<int64_t>(budget_floats, 4096));
    s->chunk = round_up(std::max<int64_t>(chunk, kAlignFloats), kAlignFloats);
    const long cpus = sysconf(_SC_NPROCESSORS_ONLN);
    s->polls_per_yield = settings.polls_per_yield > 0 ? settings.polls_per_yield
                         : cpus > 0 && s->node_size > cpus ? 1
                                                           : 1 << 14;
    if (s->node_size > 1) {
      const int64_t bytes = kHeaderBytes + s->buffers * s->chunk * static_cast<int64_t>(sizeof(float));
      s->segment = allocate_shared_window(
          s->node, bytes, &s->win,
          "lower dist.shm_chunk_kb or dist.shm_buffers (bench allreduce: --shm-chunk-kb, --shm-buffers), or use "
          "another all-reduce (mpi, ring, tree)");
      s->seen.assign(static_cast<size_t>(s->node_size) * 3, 0);
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

// ---- waiting ----------------------------------------------------------------------------

// Called while nothing can progress: spin with `pause`, yielding the core every
// polls_per_yield polls (every poll when the node's ranks outnumber its CPUs, or when the
// caller's communication thread shares its cores with compute threads).
struct Idle {
  int polls = 0;
};

void wait_a_little(const ShmState& s, Idle& idle) {
  ++idle.polls;
  if (idle.polls % s.polls_per_yield != 0) {
#if defined(__x86_64__) || defined(__i386__)
    _mm_pause();
#endif
  } else {
    sched_yield();
  }
}

// ---- the arithmetic -----------------------------------------------------------------------

// The build targets baseline x86-64 (SSE2); the sum loops are also compiled for AVX2 and
// AVX-512 and the best one the CPU has is picked at load time (GCC function multi-versioning),
// so cache-resident chunks are summed 8 or 16 floats at a time. Not under TSan: the dynamic
// loader runs the clones' (instrumented) resolver before the TSan runtime is up, a SIGSEGV.
#if defined(__x86_64__) && defined(__GNUC__) && !defined(__clang__) && !defined(__SANITIZE_THREAD__)
#define TS_SUM_LOOP __attribute__((target_clones("avx512f", "avx2", "default")))
#else
#define TS_SUM_LOOP
#endif

// out[i] = a[i] + b[i]; out never aliases a or b (it is the reducer's own buffer part).
TS_SUM_LOOP void add2(float* __restrict out, const float* a, const float* b, int64_t count) {
  for (int64_t i = 0; i < count; ++i) out[i] = a[i] + b[i];
}
// Two ranks: d[i] += other[i], copied to out[i] (float addition is commutative, so this is
// x_0 + x_1 on either rank).
TS_SUM_LOOP void add_pair(float* d, const float* __restrict other, float* __restrict out, int64_t count) {
  for (int64_t i = 0; i < count; ++i) out[i] = d[i] = d[i] + other[i];
}
// Two ranks, each summing the whole chunk: d[i] += other[i] (x_0 + x_1 on either rank).
TS_SUM_LOOP void add_in_place(float* __restrict d, const float* __restrict other, int64_t count) {
  for (int64_t i = 0; i < count; ++i) d[i] += other[i];
}
// out[i] += a[i]
TS_SUM_LOOP void add_into(float* __restrict out, const float* a, int64_t count) {
  for (int64_t i = 0; i < count; ++i) out[i] += a[i];
}

// out[i] = src[0][at + i] + src[1][at + i] + ... in rank order, where out is one rank's own
// src[r] + at (so it is summed through a small block on the stack before being overwritten).
void sum_in_rank_order(float* out, const std::vector<const float*>& src, int64_t at, int64_t count) {
  constexpr int64_t kBlock = 4096;
  alignas(64) float block[kBlock];
  for (int64_t b = 0; b < count; b += kBlock) {
    const int64_t len = std::min(kBlock, count - b);
    add2(block, src[0] + at + b, src[1] + at + b, len);
    for (size_t q = 2; q < src.size(); ++q) add_into(block, src[q] + at + b, len);
    std::memcpy(out + b, block, static_cast<size_t>(len) * sizeof(float));
  }
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

// Publishes where this rank's data for the next call lies, and returns the call's number.
uint64_t announce_call(ShmState& s, int64_t region, int64_t offset, int64_t count) {
  CallInfo& mine = s.call_info(s.node_rank);
  mine.region = region;
  mine.offset = offset;
  mine.count = count;
  mine.call.store(++s.calls, std::memory_order_release);
  return s.calls;
}

// The region holding [data, data + count) in this process, or -1.
int64_t region_of(const ShmState& s, const float* data, int64_t count) {
  for (size_t i = 0; i < s.regions.size(); ++i) {
    const float* base = s.regions[i].base[static_cast<size_t>(s.node_rank)];
    if (data >= base && data + count <= base + s.regions[i].floats) return static_cast<int64_t>(i);
  }
  return -1;
}

enum class Mode {
  allreduce,  // every node rank ends with the node sum
  reduce,     // node rank 0 ends with the node sum (other ranks' data: partial, to be overwritten)
  broadcast,  // every node rank ends with node rank 0's data
  pair,       // two ranks: each copies its whole chunk in and sums both itself (no out step)
};

// Streams `count` floats through the buffers chunk by chunk. Chunk g (numbered over every call
// on the communicator) lives in buffer g % buffers of each rank. For each chunk a rank does, in
// order: in (allreduce/reduce: copy the parts others reduce into its buffer; broadcast: rank 0
// copies the chunk), reduce (allreduce/reduce: its part, summed in rank order), out
// (allreduce: copy the other parts' sums; reduce: rank 0 only; broadcast: the other ranks copy
// rank 0's chunk), publishing a counter after each. Nothing waits in lock step: a rank does
// whatever its counters allow,
//   in(g)      once every rank is out of chunk g - buffers (that buffer's last readers),
//   reduce(g)  once every rank is in(g),
//   out(g)     once every other rank has reduced g (broadcast: once rank 0 is in(g)),
// so a rank that runs while another is descheduled works ahead up to the window. Only this
// rank reads its private `data`; the others read only its buffers.
void run_pipeline(ShmState& s, Mode mode, float* data, int64_t count) {
  const int n = s.node_size, r = s.node_rank;
  announce_call(s, -1, 0, count);
  const int64_t chunks = (count + s.chunk - 1) / s.chunk;
  const uint64_t g0 = s.sequence;
  s.sequence += static_cast<uint64_t>(chunks);
  const uint64_t window = static_cast<uint64_t>(s.buffers);
  auto chunk_len = [&](int64_t k) { return std::min(s.chunk, count - k * s.chunk); };
  const bool writes_in = mode != Mode::broadcast || r == 0;
  const bool reduces = mode != Mode::broadcast;
  const bool copies_out = mode == Mode::allreduce || (mode == Mode::reduce ? r == 0 : mode == Mode::broadcast && r != 0);
  const bool whole_chunk_in = mode == Mode::broadcast || mode == Mode::pair;

  int64_t next_in = 0, next_red = 0, next_out = 0;
  Idle idle;
  while (next_out < chunks) {
    bool progress = false;
    if (next_in < chunks) {
      const uint64_t g = g0 + static_cast<uint64_t>(next_in);
      if (!writes_in || g < window || s.all_reached(kOut, g + 1 - window)) {
        if (writes_in) {
          const int64_t len = chunk_len(next_in);
          const float* d = data + next_in * s.chunk;
          float* b = s.buffer(r, g);
          if (whole_chunk_in) {
            copy(b, d, len);
          } else {
            const Part p = part_of(len, n, r);
            copy(b, d, p.begin);
            copy(b + p.end, d + p.end, len - p.end);
          }
        }
        s.publish(kIn, g + 1);
        ++next_in;
        progress = true;
      }
    }
    if (next_red < next_in) {
      const uint64_t g = g0 + static_cast<uint64_t>(next_red);
      if (!reduces || s.all_reached(kIn, g + 1, r)) {
        if (mode == Mode::pair) {
          float* d = data + next_red * s.chunk;
          add_in_place(d, s.buffer(1 - r, g), chunk_len(next_red));
        } else if (reduces) {
          const Part p = part_of(chunk_len(next_red), n, r);
          if (p.size() > 0) {
            float* d = data + next_red * s.chunk + p.begin;
            float* mine = s.buffer(r, g) + p.begin;
            if (n == 2) {
              add_pair(d, s.buffer(1 - r, g) + p.begin, mine, p.size());
            } else {
              auto src = [&](int q) -> const float* { return q == r ? d : s.buffer(q, g) + p.begin; };
              add2(mine, src(0), src(1), p.size());
              for (int q = 2; q < n; ++q) add_into(mine, src(q), p.size());
              copy(d, mine, p.size());
            }
          }
        }
        s.publish(kReduced, g + 1);
        ++next_red;
        progress = true;
      }
    }
    if (next_out < next_red) {
      const uint64_t g = g0 + static_cast<uint64_t>(next_out);
      const bool ready = !copies_out || (mode == Mode::broadcast ? s.reached(0, kIn, g + 1)
                                                                 : s.all_reached(kReduced, g + 1, r));
      if (ready) {
        if (copies_out) {
          const int64_t len = chunk_len(next_out);
          float* d = data + next_out * s.chunk;
          if (mode == Mode::broadcast) {
            copy(d, s.buffer(0, g), len);
          } else {
            for (int q = 0; q < n; ++q) {
              if (q == r) continue;
              const Part p = part_of(len, n, q);
              copy(d + p.begin, s.buffer(q, g) + p.begin, p.size());
            }
          }
        }
        s.publish(kOut, g + 1);
        ++next_out;
        progress = true;
      }
    }
    if (progress) idle = Idle{};
    else wait_a_little(s, idle);
  }
}

// The in-place path, for data that every node rank keeps in the same shm_allocate region (one
// node): no copy-in. Rank r sums part r of each chunk straight from every rank's data, in rank
// order, into its own data and publishes it (kReduced); it then copies every other part from
// its reducer's data once that rank has published it (kOut); it returns once every rank has
// copied its parts (they read its data until then). Per rank and element: (n-1)/n reads of
// other ranks' data, twice, and 2(n-1)/n writes: half the memory traffic of the copy pipeline.
void run_in_place(ShmState& s, int64_t region, float* data, int64_t count) {
  const int n = s.node_size, r = s.node_rank;
  const ShmState::Region& reg = s.regions[static_cast<size_t>(region)];
  const int64_t offset = data - reg.base[static_cast<size_t>(r)];
  const uint64_t call = announce_call(s, region, offset, count);
  const int64_t chunks = (count + kInPlaceChunkFloats - 1) / kInPlaceChunkFloats;
  const uint64_t g0 = s.sequence, g_end = g0 + static_cast<uint64_t>(chunks);
  s.sequence = g_end;
  Idle idle;
  // Every rank's data ready (its kIn covers all chunks), and in the same place.
  s.publish(kIn, g_end);
  std::vector<const float*> src(static_cast<size_t>(n));
  for (int q = 0; q < n; ++q) {
    while (q != r && !s.reached(q, kIn, g_end)) wait_a_little(s, idle);
    const CallInfo& info = s.call_info(q);
    TS_CHECK(info.call.load(std::memory_order_acquire) == call && info.region == region && info.count == count,
             "shm all-reduce: node rank " + std::to_string(q) + " passed its data " +
                 (info.region < 0 ? std::string("in private memory") : "in another shared region or count") +
                 " while rank " + std::to_string(r) +
                 " passed it in shared memory: every rank must pass shm_allocate memory or none, and the same call");
    src[static_cast<size_t>(q)] = reg.base[static_cast<size_t>(q)] + info.offset;
  }
  auto chunk_begin = [&](int64_t k) { return k * kInPlaceChunkFloats; };
  auto chunk_len = [&](int64_t k) { return std::min(kInPlaceChunkFloats, count - chunk_begin(k)); };
  int64_t next_red = 0, next_out = 0;
  while (next_out < chunks) {
    bool progress = false;
    if (next_red < chunks) {  // never waits: all data is in place
      const int64_t at = chunk_begin(next_red);
      const Part p = part_of(chunk_len(next_red), n, r);
      float* d = data + at + p.begin;
      if (n == 2) {
        add_in_place(d, src[static_cast<size_t>(1 - r)] + at + p.begin, p.size());  // x_0 + x_1 either way
      } else {
        sum_in_rank_order(d, src, at + p.begin, p.size());
      }
      s.publish(kReduced, g0 + static_cast<uint64_t>(++next_red));
      progress = true;
    }
    if (next_out < next_red) {
      const uint64_t g = g0 + static_cast<uint64_t>(next_out);
      if (s.all_reached(kReduced, g + 1, r)) {
        const int64_t at = chunk_begin(next_out);
        for (int q = 0; q < n; ++q) {
          if (q == r) continue;
          const Part p = part_of(chunk_len(next_out), n, q);
          copy(data + at + p.begin, src[static_cast<size_t>(q)] + at + p.begin, p.size());
        }
        s.publish(kOut, g + 1);
        ++next_out;
        progress = true;
      }
    }
    if (progress) idle = Idle{};
    else wait_a_little(s, idle);
  }
  while (!s.all_reached(kOut, g_end, r)) wait_a_little(s, idle);
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

float* shm_allocate(MPI_Comm comm, int64_t count) {
  TS_CHECK(count >= 0, "shm_allocate: negative element count " + std::to_string(count));
  ShmState& s = state_of(comm);
  ShmState::Region region;
  region.floats = round_up(std::max<int64_t>(count, 1), kAlignFloats);
  const std::vector<char*> parts = allocate_shared_window(
      s.node, region.floats * static_cast<int64_t>(sizeof(float)), &region.win,
      "or allocate the data privately");
  for (char* p : parts) region.base.push_back(reinterpret_cast<float*>(p));
  s.regions.push_back(std::move(region));
  return s.regions.back().base[static_cast<size_t>(s.node_rank)];
}

ShmTopology shm_topology(MPI_Comm comm) {
  const ShmState& s = state_of(comm);
  return {s.nodes, s.node_rank, s.node_size, s.chunk, s.buffers, s.polls_per_yield};
}

void shm_allreduce_sum(MPI_Comm comm, float* data, int64_t count, const CrossNodeAllreduce& across_nodes) {
  TS_CHECK(count >= 0, "shm all-reduce: negative element count " + std::to_string(count));
  ShmState& s = state_of(comm);
  if (count == 0) return;
  if (s.nodes == 1) {
    if (s.node_size == 1) return;
    const int64_t region = region_of(s, data, count);
    if (region >= 0) run_in_place(s, region, data, count);
    else run_pipeline(s, s.node_size == 2 && s.pair ? Mode::pair : Mode::allreduce, data, count);
    return;
  }
  if (s.node_size > 1) run_pipeline(s, Mode::reduce, data, count);
  if (s.leaders != MPI_COMM_NULL) across_nodes(s.leaders, data, count);
  if (s.node_size > 1) run_pipeline(s, Mode::broadcast, data, count);
}

}  // namespace ts
