// The memory check of a run (docs/reliability.md "Memory"): before the activations, the loaders
// and the exchange allocate anything, the run estimates the peak resident memory of each rank
// and refuses (exit 2, collectively) a configuration that cannot fit in the memory the rank may
// use, instead of being killed by the kernel half-way. The estimate and the limit are recorded
// in the run file (/memory, docs/hdf5-schema.md) with the measured peak, so the estimate can be
// checked (tests/python/test_failures_memory.py keeps it within 30%).
#pragma once

#include <cstdint>
#include <map>
#include <string>
#include <vector>

#include "backend/backend.h"
#include "dist/allreduce.h"
#include "dist/batch_partition.h"
#include "dist/communicator.h"
#include "dist/exchange_strategy.h"
#include "train/data_setup.h"
#include "train/device_memory_estimate.h"
#include "train/model_options.h"

namespace ts {

// Bytes of this rank's peak resident memory, by what holds them.
struct MemoryEstimate {
  int64_t process = 0;            // code, libraries, MPI, data held in memory, code the backend generated
  int64_t parameters = 0;         // weights, gradients and non-trainable state (three arenas)
  int64_t optimizer = 0;          // SGD momentum
  int64_t activations_train = 0;  // the net planned at the training batch: outputs, gradients, workspaces, temporaries
  int64_t activations_eval = 0;   // ... at the evaluation batch (planned in turn with the training one)
  int64_t loader = 0;             // batch slots of both loaders ((prefetch + 1) x batch, evaluation capped at a pass)
  int64_t exchange = 0;           // the exchange strategy's buffers and shared windows
  int64_t recording = 0;          // per-step records; on rank 0 also every rank's, gathered, and the run file
  int64_t activation_per_sample = 0;  // what one more sample of batch adds to the activations
  bool activations_measured = false;  // false: the backend computes in memory the host cannot address
  DeviceMemoryEstimate device;        // ... then this is what it holds there

  int64_t total() const;
  // name -> bytes, for the run file (process_bytes, ..., estimate_bytes).
  std::map<std::string, int64_t> named() const;
  // "1.2 GiB (process 80.0 MiB, parameters 19.0 MiB, ...)"
  std::string text() const;
};

// The bound on one rank's peak resident memory: the smallest of the limits found
// (core/memory_limits.h), each turned into a per-rank bound (a node's shared by its ranks).
struct MemoryBound {
  int64_t bytes = 0;   // 0: no limit found
  std::string source;  // what it comes from, in words
  std::string others;  // the other limits found, in words
  DeviceMemoryBound device;  // a backend computing in device memory: what it may use there
};

// What the estimate counts of the run's settings.
struct MemoryOptions {
  ModelOptions model;  // the probe's
  double momentum = 0;  // > 0: SGD keeps a momentum buffer
  // The batch: exactly one of batch_per_worker / global_batch is set (> 0); unequal shares
  // (dist.partition) may give a rank more than the equal split.
  int64_t batch_per_worker = 0, global_batch = 0;
  PartitionKind partition = PartitionKind::equal;
  std::vector<int64_t> shares;  // static: samples per step of each rank
  int64_t share_quantum = 1;    // measured / adaptive: shares are multiples of it
  int64_t eval_batch = 0;
  int prefetch = 2;             // dataset.prefetch
  // The exchange's buffers (dist.*).
  DistStrategy strategy = DistStrategy::sync;
  AllreduceAlgorithm allreduce = AllreduceAlgorithm::ring;
  double bucket_mb = 25.0;
  int64_t shm_chunk_kb = 32, shm_buffers = 64;
  int threads = 2, loader_threads = 1;  // threads still to start (their address space)
};

// The activations are measured on a probe copy of the model (built on `backend` from the
// config, the real one is built after the check): it is planned at batches 2, 4 and 2 again,
// and the heap it takes (core/memory_limits.h heap_bytes_in_use) at 4 and at the second 2 is
// extrapolated linearly to the training and the evaluation batch; then it is dropped and its
// memory given back to the system (malloc_trim). The rest is counted from sizes. The process
// part is what is resident then and not heap taken since `heap_before_model`: code, libraries,
// MPI, data held in memory, the code the backend generated.
MemoryEstimate estimate_memory(const MemoryOptions& options, Backend& backend, const RunData& data, int64_t total_steps,
                               Communicator& comm, int64_t heap_before_model);

// The bound of this rank: `local_ranks` ranks share the node.
MemoryBound memory_bound(const MemoryOptions& options, int local_ranks);

// Refuses (ConfigError on every rank, collectively) when a rank's estimate exceeds its bound,
// in host or in device memory; the message names the estimate, the limit and where it comes
// from, and what to change (the batch key the run set among it).
void check_memory(const MemoryOptions& options, const MemoryEstimate& estimate, const MemoryBound& bound,
                  Communicator& comm);

}  // namespace ts
