// dist-internal: the `shm` all-reduce (docs/allreduce.md), for allreduce.cpp and the tests.
// Never include this outside src/dist and tests: MPI types stay in dist/.
//
// Ranks on one node sum through an MPI-3 shared-memory window (MPI_Comm_split_type
// MPI_COMM_TYPE_SHARED + MPI_Win_allocate_shared), allocated on a communicator's first shm call
// and cached on its MPI_Comm as an attribute (freed with the communicator). Each rank's
// segment of the window holds its progress counters and `buffers` buffers of `chunk` floats;
// a message streams through them chunk by chunk, so any count runs in a fixed window:
//   in      each rank copies the parts of the chunk that other ranks reduce into its buffer,
//   reduce  rank r sums part r over all node ranks in rank order 0, 1, ..., n-1 (its own part
//           read straight from its data) into its buffer and its data,
//   out     each rank copies every other part's sum from its reducer's buffer.
// No barriers: each rank publishes how many chunks it has copied in, reduced and copied out
// (release/acquire counters) and does whatever those allow, so up to `buffers` chunks are in
// flight and a rank keeps working while another is descheduled.
// Two ranks on a node (pair mode, the default): each rank copies its whole chunk in and sums
// both chunks itself, so a chunk waits on the other rank once (its copy-in), not twice.
// Every element is summed in rank order (by one rank, or for two ranks by both: x_0 + x_1 is
// the same float on either), so all ranks end bit-identical and, on one node, equal to the
// plain left-to-right float sum x_0 + x_1 + ... + x_{n-1}.
//
// Data that every rank keeps in memory from shm_allocate (below) is summed in place instead:
// each rank reads the others' data where it lies, without the copy into the buffers.
//
// A world spanning several nodes runs hierarchically: shm reduce to each node's first rank,
// `across_nodes` among those leaders (allreduce.cpp passes its ring), shm broadcast.
#pragma once

#include <mpi.h>

#include <cstdint>
#include <functional>

namespace ts {

// In-place sum among `leaders` (one rank per node, every leader calls it with the same count).
using CrossNodeAllreduce = std::function<void(MPI_Comm leaders, float* data, int64_t count)>;

// In-place element-wise sum over every rank of `comm`. Collective: every rank calls it with the
// same count, in the same order as its other shm calls on `comm`. Never concurrently on one
// communicator (different communicators may run in different threads).
void shm_allreduce_sum(MPI_Comm comm, float* data, int64_t count, const CrossNodeAllreduce& across_nodes);

// `count` floats (zeroed) of this rank's memory in a new shared-memory window over comm's node
// (collective over comm; freed with the communicator). A call of shm_allreduce_sum whose data
// every rank keeps in the same such region, on a one-node communicator, takes the in-place
// path: each rank sums its part of every chunk straight from the other ranks' data and copies
// the other parts' sums from theirs (no copy into pipeline buffers: half the memory traffic).
// Every rank must then pass region memory (an error otherwise).
float* shm_allocate(MPI_Comm comm, int64_t count);

// Read when a communicator's shared-memory state is created (its first shm call): later
// changes affect only communicators set up afterwards. Process-wide; every rank must use the
// same settings. The window (chunk_floats, buffers) is set from the run config through
// set_shm_window_options (allreduce.h); the other fields are for tests only: no environment
// variable or hidden default changes them.
struct ShmAllreduceSettings {
  // Floats per pipeline buffer (rounded up to 16) and buffers per rank: the window holds
  // buffers * chunk_floats floats per rank. Defaults: 64 x 32 KiB = 2 MiB per rank: small
  // chunks are still in cache when the other rank reads them, many let a rank run far ahead
  // while another is descheduled (docs/allreduce.md "`shm`"). With more than
  // 16 ranks on a node the chunks shrink to keep the node's buffers within 32 MiB (down to
  // 16 KiB chunks).
  int64_t chunk_floats = int64_t{1} << 13;
  int buffers = 64;
  // > 0: pretend every `fake_ranks_per_node` consecutive ranks form a node (MPI_Comm_split by
  // rank / k instead of MPI_COMM_TYPE_SHARED), so tests exercise the multi-node path on one
  // machine. 0: the real node split.
  int fake_ranks_per_node = 0;
  // How a rank waits for another: it polls with `pause` and calls sched_yield every
  // `polls_per_yield` polls. 0 = automatic: 1 when the node's ranks outnumber the online CPUs,
  // else 16384 (keep the core: yielding to another process costs a time slice). A caller whose
  // shm calls run in a communication thread beside compute threads on the same cores should
  // set 1, so the waiting thread gives its core to them. Tests set it; runs use the automatic
  // rule (docs/allreduce.md "`shm`").
  int polls_per_yield = 0;
  // Two ranks on a node: each copies its whole chunk into its buffer and sums both chunks
  // itself (one dependency on the other rank per chunk instead of two; a quarter more bytes
  // read; measured faster on 2 ranks here, docs/allreduce.md). Tests turn it off to cover
  // the reduce-scatter form on 2 ranks.
  bool pair_mode = true;
};
void set_shm_allreduce_settings(const ShmAllreduceSettings& settings);
ShmAllreduceSettings shm_allreduce_settings();

// A communicator's shm layout (sets it up if needed: collective on first use).
struct ShmTopology {
  int nodes = 1;         // number of (possibly fake) nodes
  int node_rank = 0;     // this rank's index on its node
  int node_size = 1;     // ranks on this rank's node
  int64_t chunk_floats = 0;
  int buffers = 0;
  int polls_per_yield = 0;
};
ShmTopology shm_topology(MPI_Comm comm);

}  // namespace ts
