// Data-parallel gradient and weight exchange over a Communicator (docs/distributed.md):
//   sync        w -= lr * mean_i(g_i): gradients are cut into buckets over the flat gradient
//               arena and each bucket is summed with the configured all-reduce as soon as
//               backward has produced it (overlap: by a communication thread while backward
//               goes on), then scaled by 1/N; every rank applies the same update.
//   sync + shm, sharded_update: the node's ranks share one copy of the weights; each steps the
//               optimizer on its 1/N share of every bucket as soon as shm has summed it (bit
//               for bit the replicated update, 1/N of its work per rank, nothing gathered).
//   sync + ps   the parameter server of the SHM-Learn-Dist paper: rank 0 gathers every
//               rank's gradient buckets, averages them, applies the optimizer, and broadcasts
//               the weights; other ranks never run the optimizer.
//   weight_avg  every rank applies its own update; every `period` steps (the caller decides
//               which steps) weights and non-trainable state are averaged with the
//               configured all-reduce. Velocities stay local.
// The step's loss rides along with the last bucket (one extra float plus a non-finite flag),
// so the divergence verdict and the mean loss cost no extra message; that bucket is the
// arena's first min(bucket, 64 KiB) (it is copied through a staging buffer). World size 1 takes the
// same path (the all-reduces are no-ops). Knows nothing of nets: it works on float arenas.
#pragma once

#include <cstdint>
#include <functional>
#include <memory>
#include <string>
#include <utility>
#include <vector>

#include "dist/allreduce.h"
#include "dist/communicator.h"

namespace ts {

enum class DistStrategy { sync, weight_avg };

// "sync" | "weight_avg"; anything else is a ConfigError listing the accepted names.
DistStrategy parse_dist_strategy(const std::string& name);

struct ExchangeOptions {
  DistStrategy strategy = DistStrategy::sync;
  AllreduceAlgorithm algorithm = AllreduceAlgorithm::mpi;
  int64_t bucket_elements = int64_t{25} << 18;  // floats per bucket (25 MiB)
  // sync: reduce buckets on a communication thread while backward runs (needs
  // MPI_THREAD_SERIALIZED); false: reduce them in the caller's thread after backward.
  bool overlap = true;
  // sync + shm on one node, with the grads arena in allocate_shared_floats memory and the
  // params arena one node-wide array (allocate_shared_floats(..., node_wide = true), the same
  // weights for every rank of the node): each rank applies the optimizer only to its share of
  // each bucket, in place, as soon as that share is summed (shm_allreduce_sum_update), so no
  // weights or gradients are gathered: 1/N of the optimizer's work per rank and one copy of the
  // weights per node. The staged last bucket is updated share by share after the verdict,
  // then the ranks meet (a barrier) before anyone reads the weights again. broadcast_model
  // leaves the weights alone. Others: a ConfigError at construction.
  bool sharded_update = false;
};

// The optimizer step over elements [offset, offset + count) of the arenas (this step's LR).
using RangeUpdate = std::function<void(int64_t offset, int64_t count)>;

// The model the exchange works on; the arrays belong to the caller (the Net's arenas) and
// must outlive the exchange. Every rank passes the same counts.
struct ModelArenas {
  float* params = nullptr;  // (param_count)
  float* grads = nullptr;   // (param_count), the mirror of params
  int64_t param_count = 0;
  float* state = nullptr;   // (state_count) non-trainable state, e.g. BN running mean/var
  int64_t state_count = 0;
};

// Where one step's exchange spent its time on this rank (seconds).
struct ExchangeTimes {
  double comm = 0;       // in communication (collective calls and their staging copies), any thread
  double comm_wait = 0;  // the calling thread blocked on communication after backward
  double optimizer = 0;  // in the update callback
  double gather = 0, average = 0, broadcast = 0;  // parameter-server phases (ps only)
};

struct StepVerdict {
  bool exchanged = false;  // the losses of all ranks were combined this step
  double loss = 0;         // mean loss over ranks if exchanged, else this rank's loss
  bool diverged = false;   // some rank saw a non-finite loss (known on every rank alike)
  ExchangeTimes times;
};

class GradientExchange {
 public:
  // Throws ConfigError if overlap is asked for but MPI lacks MPI_THREAD_SERIALIZED.
  GradientExchange(Communicator& comm, ModelArenas arenas, ExchangeOptions options);
  ~GradientExchange();
  GradientExchange(const GradientExchange&) = delete;
  GradientExchange& operator=(const GradientExchange&) = delete;

  // Every rank takes rank 0's parameters and state (once, at set-up).
  void broadcast_model();

  // The step protocol, called by every rank in the same order:
  // 1. before backward, with this rank's loss (mean over its batch) and this step's optimizer
  //    update (applied in finish_step, or with sharded_update partly while buckets are summed);
  void begin_step(float local_loss, RangeUpdate update);
  // 2. as backward finishes each layer: gradients [offset, offset + count) are final. Ranges
  //    arrive in decreasing, contiguous order (Net::backward's reverse layer order);
  void gradients_ready(int64_t offset, int64_t count);
  // 3. after backward: completes the exchange and applies the step's update to the whole
  //    arenas (on every rank, or on rank 0 only for ps). The update is skipped when the run
  //    diverged (sharded_update: only the last bucket's; the other buckets are updated before
  //    the verdict is known, and a diverged run ends). `average_weights` matters for
  //    weight_avg only: average this step (the verdict covers every step since the previous
  //    average).
  StepVerdict finish_step(bool average_weights);

  // Averages the non-trainable state over ranks (before evaluation: BN running statistics
  // are per worker during training).
  void average_state();

  // The buckets as (offset, count) in the order they are reduced (highest offsets first; the
  // last one is [0, min(bucket, 16384 floats, param_count)).
  const std::vector<std::pair<int64_t, int64_t>>& buckets() const;

 private:
  struct Impl;
  std::unique_ptr<Impl> impl_;
};

}  // namespace ts
