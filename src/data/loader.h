// Batches from a SampleSource: per-epoch seeded shuffle, per-step rank split, worker threads
// that read and decode samples into a ring of `prefetch` batch slots ahead of the trainer.
// The reads happen here, inside the timed loop, so the wait in next() (the trainer's
// data_wait) measures the source: its storage and its format.
#pragma once

#include <cstddef>
#include <cstdint>
#include <functional>
#include <memory>
#include <vector>

#include "data/counting_storage.h"
#include "data/sample_source.h"

namespace ts {

// Allocates `bytes` bytes for a slot buffer; the deleter of the returned pointer frees them.
// The default (an empty function) is 64-byte aligned host memory; a GPU backend can pass
// page-locked memory so batches copy to the device asynchronously.
using SlotAllocator = std::function<std::shared_ptr<void>(size_t bytes)>;

struct LoaderOptions {
  int64_t batch = 64;       // samples per batch on this rank
  bool shuffle = true;      // reshuffle every epoch from (seed, epoch)
  uint64_t seed = 1;
  int threads = 1;          // worker threads
  int prefetch = 2;         // batches prepared ahead
  // Training: global step k takes samples [k*world*batch, (k+1)*world*batch) of the epoch's
  // order and this rank the `rank`-th batch of them (N ranks x b see what 1 rank x N*b sees).
  // Evaluation: this rank takes the contiguous block [rank*n/world, (rank+1)*n/world).
  int rank = 0, world = 1;
  // Training with per-rank shares (docs/heterogeneous.md): global step k
  // takes samples [k*global_batch, (k+1)*global_batch) and this rank `batch` of them from
  // `share_offset` on (offsets are the prefix sums of the ranks' shares). global_batch 0: the
  // equal split above (world x batch, offset rank x batch). `max_batch` (0: batch) sizes the
  // slots for the largest share set_share may give later.
  int64_t global_batch = 0, share_offset = 0, max_batch = 0;
  // Share changes after first_batch that a resumed run had decided before it stopped (set_share's
  // arguments, in increasing from_batch order), in force before any worker claims a batch.
  struct ShareFrom {
    int64_t from_batch = 0, batch = 0, offset = 0;
  };
  std::vector<ShareFrom> later_shares;
  bool drop_last = true;    // drop the last partial batch of an epoch (training)
  // Training: the sequence number of the first batch (batches the run took before it stopped;
  // a resumed run continues with exactly the batches the uninterrupted run would have seen).
  // Evaluation loaders start every pass from the beginning: must be 0.
  int64_t first_batch = 0;
  SlotAllocator allocate;   // memory of the batch slots (empty: aligned host memory)
};

// A batch owned by the loader; valid until the next call to Loader::next. The buffers hold
// LoaderOptions::batch rows (max_batch with shares); those past `size` (a partial evaluation batch) are zero.
struct Batch {
  int64_t size = 0;
  int64_t epoch = 0;             // epoch this batch belongs to
  const float* images = nullptr; // (size, sample) normalised
  const int32_t* labels = nullptr; // (size) when the source has classes, else null
  const float* targets = nullptr;  // (size, outputs) when it has regression targets, else null
};

class Loader {
 public:
  // `source` is referenced: it must outlive the Loader. Throws ConfigError for
  // impossible options (batch < 1, threads < 1, prefetch < 1, rank outside [0, world), or a
  // drop_last loader whose epoch holds no full global batch of world x batch,
  // or an evaluation loader with fewer samples than ranks). Any loader with drop_last=false behaves
  // as an evaluation loader (one pass, then false).
  // A read error in a worker is rethrown by the next() that reaches its batch.
  Loader(const SampleSource& source, LoaderOptions options);
  ~Loader();
  Loader(const Loader&) = delete;
  Loader& operator=(const Loader&) = delete;

  // Next batch; epochs roll over forever for training (drop_last) loaders, whose workers read
  // ahead from construction on. For an evaluation loader (shuffle=false, drop_last=false)
  // returns false after one pass, then restarts; its workers read a pass only from that pass's
  // first next() on, so evaluation reads never overlap the training steps between passes.
  bool next(Batch& batch);
  // Seconds the last next() call waited for a worker (the trainer's data_wait).
  double last_wait_seconds() const;
  // Storage reads of the batch the last next() returned: bytes and seconds inside read_at
  // (counted through a counting storage, data/counting_storage.h; zero for data in memory).
  ReadCounts last_read_counts() const;
  // Batches per epoch on this rank (training: the same on every rank).
  int64_t batches_per_epoch() const;
  // The sequence number of the batch the next next() returns (training: first_batch plus the
  // batches handed out so far), what a checkpoint records as the loader's position.
  int64_t position() const;
  // Training with shares: from batch `from_batch` on, this rank takes `batch` samples (at most
  // max_batch) of each global batch, from `offset` on. Every rank must name the same
  // from_batch, so the shares of one step always partition its global batch. Workers may have
  // claimed up to position() + prefetch; any later batch is accepted (ConfigError otherwise).
  void set_share(int64_t batch, int64_t offset, int64_t from_batch);

 private:
  struct Impl;
  std::unique_ptr<Impl> impl_;
};

}  // namespace ts
