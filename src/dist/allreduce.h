// All-reduce algorithms over a Communicator (docs/allreduce.md has each one's alpha-beta
// cost): the MPI library's own, four written with point-to-point / rooted MPI calls so they
// can be compared with it, and one through shared memory. Every algorithm works for any world
// size and element count.
#pragma once

#include <cstdint>
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
  butterfly,  // recursive doubling: log2(n) exchanges of the whole segment with a partner at
              // distance 1, 2, 4, ...; other world sizes fold the extra ranks in first
  nccl,  // NVIDIA's collectives on GPU memory (CUDA builds): the exchange strategies and the
         // benchmark on device buffers (dist/cuda/), never allreduce_sum's host memory
};

// A name of known_allreduce_algorithms() (built or not: allreduce_algorithm_unavailable_reason
// says whether it can run); anything else is a ConfigError listing them.
AllreduceAlgorithm parse_allreduce_algorithm(const std::string& name);
const char* allreduce_algorithm_name(AllreduceAlgorithm algorithm);
// Every algorithm that reduces host memory (allreduce_sum), in declaration order (mpi, ring,
// tree, ps, shm, butterfly): every binary runs them.
std::vector<AllreduceAlgorithm> all_allreduce_algorithms();
// Every algorithm the project knows, built into this binary or not (adds nccl): what a run
// config may name; a run refuses one that is not built (train/capabilities.cpp).
std::vector<AllreduceAlgorithm> known_allreduce_algorithms();
// nccl is built with the CUDA backend (-DTRAINSCALE_CUDA=ON); the others always.
bool allreduce_algorithm_built(AllreduceAlgorithm algorithm);
// Why an algorithm is not built here ("nccl needs the cuda backend, which this build lacks"), or "".
std::string allreduce_algorithm_missing_reason(AllreduceAlgorithm algorithm);
// Why an algorithm cannot run in this process: not built, or (nccl) no CUDA device visible;
// "" when it can.
std::string allreduce_algorithm_unavailable_reason(AllreduceAlgorithm algorithm);

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
// nccl is refused here (RuntimeError): it reduces device memory.
void allreduce_sum(Communicator& comm, AllreduceAlgorithm algorithm, float* data, int64_t count,
                   PsTimings* ps_timings = nullptr);

// `count` floats (zeroed) in shared memory that the other ranks of this rank's node can read
// (an MPI-3 shared-memory window). A `shm` all-reduce on data that every rank keeps in such
// memory, on one node, runs in place: no copy into the pipeline's buffers, half the memory
// traffic (docs/allreduce.md). Every rank then must pass such memory. Other algorithms treat
// it as plain memory. Collective over `comm`; freed with the communicator.
float* allocate_shared_floats(Communicator& comm, int64_t count);

// The window of the `shm` copy pipeline: each rank's buffers (docs/allreduce.md gives the
// defaults, 64 x 32 KiB, on 2 ranks). Run configs set them as dist.shm_chunk_kb and
// dist.shm_buffers, `bench allreduce` as --shm-chunk-kb and --shm-buffers, and both record them.
struct ShmWindowOptions {
  int64_t chunk_bytes = int64_t{32} << 10;  // per buffer (rounded up to 64 bytes)
  int buffers = 64;                          // per rank
};
// Process-wide: read when a communicator's shm state is set up (its first shm call or
// allocate_shared_floats), so set it before. Every rank must set the same.
void set_shm_window_options(const ShmWindowOptions& options);
ShmWindowOptions shm_window_options();

}  // namespace ts
