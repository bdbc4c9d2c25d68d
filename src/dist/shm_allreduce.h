// dist-internal: the `shm` all-reduce (docs/distributed.md), for allreduce.cpp and the tests.
// Never include this outside src/dist and tests: MPI types stay in dist/.
//
// Ranks on one node sum through an MPI-3 shared-memory window (MPI_Comm_split_type
// MPI_COMM_TYPE_SHARED + MPI_Win_allocate_shared), allocated on a communicator's first shm call
// and cached on its MPI_Comm as an attribute (freed with the communicator). Each rank's
// segment of the window holds one barrier counter and three buffers of `chunk` floats; a
// message streams through them chunk by chunk, so any count runs in a fixed window:
//   copy-in   each rank copies the parts of the chunk that other ranks reduce into its buffer,
//   reduce    rank r sums part r over all node ranks in rank order 0, 1, ..., n-1 (its own
//             part is read straight from its data) into its buffer and its data,
//   copy-out  each rank copies every other part's sum from its reducer's buffer.
// The three phases are software-pipelined (chunk k copied in while k-1 is reduced and k-2
// copied out), one lightweight barrier (per-rank counters, release/acquire) per step.
// Every element is summed once, in rank order, so all ranks end bit-identical and, on one
// node, equal to the plain left-to-right float sum x_0 + x_1 + ... + x_{n-1}.
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

// Read when a communicator's shared-memory state is created (its first shm call): later
// changes affect only communicators set up afterwards. Process-wide; every rank must use the
// same settings.
struct ShmAllreduceSettings {
  // Floats per pipeline buffer of each rank (the window holds 3 per rank); rounded up to 16.
  int64_t chunk_floats = int64_t{1} << 15;
  // > 0: pretend every `fake_ranks_per_node` consecutive ranks form a node (MPI_Comm_split by
  // rank / k instead of MPI_COMM_TYPE_SHARED), so tests exercise the multi-node path on one
  // machine. 0: the real node split.
  int fake_ranks_per_node = 0;
};
void set_shm_allreduce_settings(const ShmAllreduceSettings& settings);
ShmAllreduceSettings shm_allreduce_settings();

// A communicator's shm layout (sets it up if needed: collective on first use).
struct ShmTopology {
  int nodes = 1;         // number of (possibly fake) nodes
  int node_rank = 0;     // this rank's index on its node
  int node_size = 1;     // ranks on this rank's node
  int64_t chunk_floats = 0;
};
ShmTopology shm_topology(MPI_Comm comm);

}  // namespace ts
