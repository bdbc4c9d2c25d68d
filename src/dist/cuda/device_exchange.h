// dist-internal: what the CUDA part of dist/ (dist/cuda/, compiled with -DTRAINSCALE_CUDA=ON
// only, where TRAINSCALE_HAVE_NCCL is defined) offers the rest of dist/. No CUDA or NCCL type
// appears here, so the files that call these under #ifdef TRAINSCALE_HAVE_NCCL compile in every
// build.
#pragma once

#include <cstddef>
#include <memory>
#include <string>

#include "dist/allreduce_bench.h"
#include "dist/arena_link.h"
#include "dist/exchange_strategy.h"
#include "dist/group_sum.h"

namespace ts {

// The link to device arenas (dist/cuda/cuda_arena_link.cpp): pinned host mirrors and a copy
// stream; `cuda_aware_mpi` (the caller checked the library and the algorithm, mpi): average and
// broadcast hand the device memory itself to MPI.
std::unique_ptr<ArenaLink> make_cuda_arena_link(const ModelArenas& arenas, bool cuda_aware_mpi, size_t marks);

// `sync` with nccl on device arenas (dist/cuda/nccl_sync_strategy.h). Collective.
std::unique_ptr<ExchangeStrategy> make_nccl_sync_exchange(Communicator& comm, const ModelArenas& arenas,
                                                          const ExchangeOptions& options);

// `sync` with dist.hetero_allreduce device: host ranks' buckets summed on their node's GPU rank
// (dist/device_sum_strategy.h, dist/cuda/cuda_group_sum.cpp). Collective; ConfigError on every
// rank when a node has host ranks but no GPU rank.
std::unique_ptr<ExchangeStrategy> make_device_sum_exchange(Communicator& comm, const ModelArenas& arenas,
                                                           const ExchangeOptions& options);

// A GPU rank's sums for dist.hetero_allreduce device over its device gradient arena `grads` on
// CUDA device `device` (dist/group_sum.h; NCCL over `summers` when it has several ranks).
std::unique_ptr<GroupSum> make_cuda_group_sum(float* grads, int device, Communicator& summers, size_t members,
                                              int64_t capacity);

// "" when this process sees a CUDA device, else why nccl cannot run.
std::string nccl_device_missing_reason();

// One nccl point of `bench allreduce` on device buffers (dist/cuda/nccl_bench.cpp).
AllreduceBenchPoint bench_nccl_allreduce(Communicator& comm, const AllreduceBenchCase& c);

}  // namespace ts
