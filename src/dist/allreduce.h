// All-reduce algorithms over a Communicator (docs/distributed.md has each one's alpha-beta
// cost): the MPI library's own, three written with point-to-point / rooted MPI calls so they
// can be compared with it, and one through shared memory. Every algorithm works for any world
// size and element count.
#pragma once

#include <cstdint>
#include <functional>
#include <string>
#include <vector>

#include "dist/communicator.h"

namespace ts {

enum class AllreduceAlgorithm {
  mpi,   // MPI_Allreduce
  ring,  // reduce-scatter + all-gather around a ring (bandwidth-optimal, "bucket")
  tree,  // binomial-tree reduce to rank 0 + binomial-tree broadcast ("minimum spanning tree")
  ps,    // parameter server: rank 0 gathers everything, sums, broadcasts
  shm,   // reduce-scatter + all-gather through an MPI-3 shared-memory window, pipelined in
         // chunks; across nodes: shm reduce, ring among node leaders, shm broadcast
};

// "mpi" | "ring" | "tree" | "ps" | "shm"; anything else is a ConfigError listing the accepted names.
AllreduceAlgorithm parse_allreduce_algorithm(const std::string& name);
const char* allreduce_algorithm_name(AllreduceAlgorithm algorithm);
// Every algorithm, in declaration order.
std::vector<AllreduceAlgorithm> all_allreduce_algorithms();

// Where a parameter-server all-reduce spent its time, on this rank, for one call (seconds).
// `average_s` is rank 0's summation (other ranks report 0).
struct PsTimings {
  double gather_s = 0, average_s = 0, broadcast_s = 0;
};

// In-place element-wise sum over all ranks: afterwards data[i] on every rank holds the sum of
// every rank's data[i]. Collective: every rank calls it with the same algorithm and count, in
// the same order; calls on one communicator must not run concurrently (one thread at a time).
// Every algorithm but `mpi` leaves the same bits on every rank; `shm` on one node gives the
// plain float sum in rank order, ((x_0 + x_1) + x_2) + ... The first `shm` call on a
// communicator sets up its shared-memory window (collective; freed with the communicator).
// `ps_timings` (optional) receives the phase times of a `ps` call (zeros for other algorithms).
void allreduce_sum(Communicator& comm, AllreduceAlgorithm algorithm, float* data, int64_t count,
                   PsTimings* ps_timings = nullptr);

// `count` floats (zeroed) in shared memory that the other ranks of this rank's node can read
// (an MPI-3 shared-memory window). A `shm` all-reduce on data that every rank keeps in such
// memory, on one node, runs in place: no copy into the pipeline's buffers, half the memory
// traffic (docs/distributed.md). Every rank then must pass such memory. Other algorithms treat
// it as plain memory. `node_wide`: one array for the whole node (held by node rank 0, every
// rank gets its address) instead of one per rank. Collective over `comm`; freed with the
// communicator.
float* allocate_shared_floats(Communicator& comm, int64_t count, bool node_wide = false);

// The number of nodes (shared-memory domains) `comm` spans (collective on first use per
// communicator: it sets up shm's window).
int allreduce_node_count(Communicator& comm);

// shm's reduce-scatter + update, for a sharded optimizer step (one node; `data` in
// allocate_shared_floats memory on every rank, `weights` in node-wide allocate_shared_floats
// memory; see shm_allreduce_sum_update in shm_allreduce.h): `data` is summed over ranks, each
// rank calls on_reduced(offset, count) on the parts it summed (1/N of the message, the same
// parts every call), which updates those parts of `weights` in place; when it returns, all of
// `weights` is final on every rank. Collective.
void allreduce_sum_update(Communicator& comm, float* data, float* weights, int64_t count,
                          const std::function<void(int64_t offset, int64_t count)>& on_reduced);

}  // namespace ts
