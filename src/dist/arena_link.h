// dist-internal, shared by the exchange strategies that reduce with MPI algorithms (sync, ps,
// weight_avg): how a strategy reaches the model's arenas, so that each is written once for host
// and device memory.
//
// Host arenas: the link only points at them (host(a) is the arena; mark, wait, pull and push do
// nothing). Device arenas (CUDA build, dist/cuda/cuda_arena_link.cpp): host(a) is a pinned host
// mirror of the arena; the caller's thread marks how far the compute stream has come (an event
// recorded on it), and any thread pulls a range into the mirror once the compute work before a
// mark is done, reduces it there with an MPI algorithm and pushes it back on a copy stream of the
// link's own. The compute stream waits for the pushes before the update
// (order_compute_after_pushes). With a CUDA-aware MPI library and algorithm mpi, average and
// broadcast hand the device memory to MPI instead (ArenaTransport::cuda_aware_mpi).
//
// Threads: mark, now_mark and order_compute_after_pushes belong to the caller's (training)
// thread; pull, push, average and broadcast may run on the communication thread (one thread at
// a time); wait on either.
#pragma once

#include <cstddef>
#include <cstdint>
#include <memory>

#include "dist/exchange_strategy.h"

namespace ts {

enum class Arena { params, grads, state };

class ArenaLink {
 public:
  virtual ~ArenaLink() = default;

  // How the strategy's collectives reach the arenas.
  virtual ArenaTransport transport() const = 0;
  // Host memory standing for arena `a`: the arena itself, or its pinned mirror.
  virtual float* host(Arena a) = 0;
  // Caller's thread: mark `slot` (0 .. marks - 1) is the compute work queued so far.
  virtual void mark(size_t slot) = 0;
  // Caller's thread: marks the compute work queued so far in the link's own extra slot and
  // returns that slot (for exchanges outside the bucket pipeline: after the update, at set-up).
  virtual size_t now_mark() = 0;
  // Blocks until the compute work before mark `slot` is done (not communication: callers keep
  // it out of their comm times).
  virtual void wait(size_t slot) = 0;
  // [offset, offset + count) of arena `a` into host(a), after the compute work before mark
  // `slot`; returns when the values are on the host.
  virtual void pull(Arena a, int64_t offset, int64_t count, size_t slot) = 0;
  // host(a)[offset, offset + count) back into arena `a` (queued: returns at once).
  virtual void push(Arena a, int64_t offset, int64_t count) = 0;
  // Caller's thread: compute work queued from now on runs after every push and device
  // collective so far.
  virtual void order_compute_after_pushes() = 0;

  // In-place mean over ranks of [offset, offset + count) of arena `a` with `algorithm`, after
  // mark `slot`: pull, average on the host, push; `ps` receives a ps all-reduce's phases.
  virtual void average(Communicator& comm, AllreduceAlgorithm algorithm, Arena a, int64_t offset, int64_t count,
                       size_t slot, PsTimings* ps = nullptr);
  // Rank `root`'s [offset, offset + count) of arena `a` on every rank, after mark `slot`.
  virtual void broadcast(Communicator& comm, Arena a, int64_t offset, int64_t count, int root, size_t slot);

  // Caller's thread, the strategies' broadcast_model and average_state: rank 0's parameters and
  // state on every rank (set-up), or the state's mean over ranks with `algorithm` (before an
  // evaluation), after the compute work queued so far; compute queued next runs after them.
  void broadcast_model(Communicator& comm, const ModelArenas& arenas);
  void average_state(Communicator& comm, AllreduceAlgorithm algorithm, const ModelArenas& arenas);
};

// The link for `arenas` with `marks` mark slots (the strategy's buckets). Device arenas need the
// CUDA build (RuntimeError otherwise); with options.algorithm mpi, options.cuda_aware_mpi and a
// CUDA-aware MPI library, average and broadcast hand the device memory to MPI; otherwise they
// stage it.
std::unique_ptr<ArenaLink> make_arena_link(const ModelArenas& arenas, const ExchangeOptions& options, size_t marks);

}  // namespace ts
