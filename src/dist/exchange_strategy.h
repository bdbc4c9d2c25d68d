// Data-parallel exchange strategies over a Communicator (docs/strategies.md):
// how the ranks combine their gradients or weights each step.
// The trainer drives every strategy through the same step protocol (below); a strategy is
// created by make_exchange_strategy from the run's dist settings:
//   sync        (dist/sync_strategy.h) w -= lr * mean_i(g_i): gradient buckets all-reduced as
//               soon as backward has produced them (overlap: on a communication thread);
//   device_sum  (dist/device_sum_strategy.h) sync with dist.hetero_allreduce device: CPU ranks'
//               buckets summed on their node's GPU rank, NCCL between the GPU ranks;
//   ps          (dist/ps_strategy.h) sync with dist.allreduce ps: rank 0 gathers the gradient
//               buckets, averages them, steps the optimizer and broadcasts the weights;
//   weight_avg  (dist/weight_avg_strategy.h) every rank steps on its own gradients; weights and
//               non-trainable state averaged when the caller says (every `period` steps).
//   hogwild     (dist/hogwild_strategy.h) threads of one process share one weight arena, each
//               updating it without locks; the main thread's replica runs this protocol;
//   async_ps    (dist/async_ps_worker.h) workers push gradients to parameter servers on ranks of
//               their own and pull fresh weights, within a staleness bound; the servers run
//               train/ps_server_loop.h, outside this protocol.
// The pieces they share are composed: the bucket plan and the staged tail that carries the loss
// (dist/bucket_plan.h), the bucket pipeline with its communication thread (dist/bucket_pipeline.h);
// those that reach the arenas through an ArenaLink derive from dist/linked_exchange.h. A new strategy (asynchronous, compressed, heterogeneous) is one more
// implementation of ExchangeStrategy in a file of its own plus a line in the factory. What only
// some strategies do is a capability interface of its own, which they inherit as well and the
// trainer asks for once at set-up: dist/remote_model.h, dist/message_boundary.h (async_ps),
// dist/device_loss_combiner.h (nccl), dist/outside_peers.h (async_ps, hogwild).
// Strategies know nothing of nets: they work on float arenas.
#pragma once

#include <cstdint>
#include <functional>
#include <memory>
#include <string>
#include <utility>
#include <vector>

#include "core/error.h"
#include "dist/allreduce.h"
#include "dist/communicator.h"
#include "dist/compression_options.h"
#include "dist/local_loss.h"

namespace ts {

enum class DistStrategy { sync, weight_avg, async_ps, hogwild };
// "sync" | "weight_avg" | "async_ps" | "hogwild"
const char* dist_strategy_name(DistStrategy strategy);
std::vector<DistStrategy> all_dist_strategies();

// async_ps (dist/async_ps_worker.h): the servers beyond the workers' communicator, the bound,
// and what rank 0 tells the servers so they can follow the run's learning-rate schedule.
struct AsyncPsOptions {
  Communicator* world = nullptr;  // workers + servers (workers first); outlives the strategy
  int servers = 1;
  int64_t staleness = 0;  // the fastest worker runs at most this many steps ahead of the slowest
  int64_t total_steps = 0, global_batch = 0, steps_per_epoch = 0;
};

// hogwild (dist/hogwild_strategy.h): the run's steps, and what ends the other replicas after
// the last one (the trainer's threads, train/hogwild_crew.h).
struct HogwildOptions {
  int64_t total_steps = 0;
  std::function<void()> after_last_step;
};

struct ExchangeOptions {
  DistStrategy strategy = DistStrategy::sync;
  AllreduceAlgorithm algorithm = AllreduceAlgorithm::mpi;  // sync + ps: the parameter server
  int64_t bucket_elements = int64_t{25} << 18;  // floats per bucket (25 MiB)
  // sync: reduce buckets on a communication thread while backward runs (needs
  // MPI_THREAD_SERIALIZED); false: reduce them in the caller's thread after backward. With
  // nccl, buckets are queued on NCCL's stream as they become final (no thread), or all after
  // backward.
  bool overlap = true;
  // Device arenas with a CUDA-aware MPI library (MpiLibrary::cuda_aware): algorithm mpi passes
  // device pointers to MPI. false: always stage through pinned host memory.
  bool cuda_aware_mpi = true;
  // sync: gradient buckets exchanged compressed (docs/compression.md);
  // none keeps today's fp32 path untouched.
  CompressionOptions compression;
  // sync (dist.hetero_allreduce device): the GPU ranks sum the host ranks' gradients
  // (dist/device_sum_strategy.h); false: every rank sums with `algorithm` in host memory.
  bool device_sum = false;
  AsyncPsOptions async_ps;  // async_ps only
  HogwildOptions hogwild;   // hogwild only
};

// The optimizer step over elements [offset, offset + count) of the arenas (this step's LR).
using RangeUpdate = std::function<void(int64_t offset, int64_t count)>;

// Where a model's arenas live. Host memory (the ref and cpu backends) needs nothing more; CUDA
// device memory (backend cuda: Backend::describe().host_accessible is false) comes with the
// device and the stream the backend computes on, as opaque handles (no CUDA type leaves
// dist/cuda): a strategy orders its copies and collectives after backward with events on that
// stream, and the update the caller queues there after its own work.
struct ArenaDevice {
  bool host_accessible = true;
  int cuda_device = -1;            // the CUDA device ordinal of the arenas (device arenas only)
  void* compute_stream = nullptr;  // cudaStream_t of backward and the update (device arenas only)
};

// The model a strategy works on; the arrays belong to the caller (the Net's arenas) and must
// outlive the strategy. Every rank passes the same counts and the same kind of memory.
struct ModelArenas {
  float* params = nullptr;  // (param_count)
  float* grads = nullptr;   // (param_count), the mirror of params
  int64_t param_count = 0;
  float* state = nullptr;   // (state_count) non-trainable state, e.g. BN running mean/var
  int64_t state_count = 0;
  ArenaDevice device;       // host memory unless said otherwise
};

// How a strategy's collectives reach the arenas (the run file's `dist_transport`, the logs):
//   host            the arenas are host memory; the MPI algorithms work on them in place;
//   staged          device arenas, each bucket copied to pinned host memory, reduced with the
//                   MPI algorithm and copied back (dist/arena_link.h);
//   cuda_aware_mpi  device arenas handed to a CUDA-aware MPI library (algorithm mpi only: the
//                   others sum on the host and stage); the tail bucket with the loss is staged;
//   nccl            device arenas reduced by NCCL on its own stream;
//   device_sum      dist.hetero_allreduce device: host ranks send their buckets to a GPU rank
//                   of their node, which sums them on the GPU (NCCL between the GPU ranks) and
//                   sends the mean back (dist/device_sum_strategy.h).
enum class ArenaTransport { host, staged, cuda_aware_mpi, nccl, device_sum };
const char* arena_transport_name(ArenaTransport transport);

// When one bucket's exchange ran on this rank: core/timer.h now_seconds() at its start and end
// (the thread that exchanged it; the run file keeps them relative to the step's start).
struct BucketSpan {
  double start = 0, end = 0;
};

// Where one step's exchange spent its time on this rank (seconds).
struct ExchangeTimes {
  double comm = 0;       // in communication (collective calls and their staging copies), any thread
  double comm_wait = 0;  // the calling thread blocked on communication after backward
  double optimizer = 0;  // in the update callback
  double gather = 0, average = 0, broadcast = 0;  // parameter-server phases (ps only)
  // Compressed exchanges (records_compression): encoding and decoding seconds (parts of comm),
  // and the bytes of this rank's contributions (fp32 buckets count 4 bytes an element).
  double compress = 0, decompress = 0;
  double wire_bytes = 0;
  // Each bucket's exchange in this step, in bucket order (the gradient strategies' buckets,
  // weight_avg's when it averages, async_ps's push and pull as one); empty: no exchange
  // (hogwild, a step of weight_avg without an average) or a strategy that does not time them (nccl).
  std::vector<BucketSpan> buckets;
};

struct StepVerdict {
  bool exchanged = false;  // the losses of all ranks were combined this step
  double loss = 0;         // mean loss over ranks if exchanged, else this rank's loss
  bool diverged = false;   // some rank saw a non-finite loss (known on every rank alike)
  ExchangeTimes times;
  // A loss combined on the device (LocalLoss::on_device): the step's number for
  // DeviceLossCombiner::combined (1, 2, ...); loss, diverged and times.comm are then not known yet
  // (NaN, false, 0). 0: everything above is known.
  int64_t combined_id = 0;
};

// (offset, count) of a range of the arenas.
using Bucket = std::pair<int64_t, int64_t>;

class ExchangeStrategy {
 public:
  virtual ~ExchangeStrategy() = default;

  // "sync", "ps" or "weight_avg" (logs).
  virtual const char* name() const = 0;
  // How the collectives reach the arenas (recorded in the run file).
  virtual ArenaTransport transport() const = 0;
  // True when the step times include the parameter-server phases gather, average, broadcast.
  virtual bool times_ps_phases() const = 0;
  // True when the step times include compress and decompress, and wire_bytes is measured.
  virtual bool records_compression() const { return false; }
  // Every rank takes rank 0's parameters and state (once, at set-up).
  virtual void broadcast_model() = 0;

  // The step protocol, called by every rank in the same order:
  // 1. before backward, with this rank's loss (mean over its batch; read where the strategy
  //    needs it, as late as it can: dist/local_loss.h) and this step's optimizer update (which
  //    the strategy applies where and when it says);
  virtual void begin_step(LocalLoss local_loss, RangeUpdate update) = 0;
  // 2. as backward finishes each layer: gradients [offset, offset + count) are final. Ranges
  //    arrive in decreasing, contiguous order (Net::backward's reverse layer order);
  virtual void gradients_ready(int64_t offset, int64_t count) = 0;
  // 3. after backward: completes the exchange and applies the update (skipped when the run
  //    diverged). `average_weights` matters for strategies that average weights periodically
  //    (weight_avg): average this step (the verdict covers every step since the previous one).
  virtual StepVerdict finish_step(bool average_weights) = 0;
  // False when a step's verdict is just this rank's own loss (sync on one rank: nothing is
  // exchanged): the trainer may then hand begin_step a stand-in and read the loss itself later
  // (loss_reads: log, train/loss_ledger.h); the verdict's loss and divergence are the stand-in's.
  virtual bool combines_losses() const { return true; }

  // Averages the non-trainable state over ranks (before evaluation: BN running statistics are
  // per worker during training).
  virtual void average_state() = 0;
  // The ranges the strategy exchanges, in the order it does (for logs and tests).
  virtual const std::vector<Bucket>& buckets() const = 0;

  // Checkpoints (train/checkpoint.h). True when, between steps, every rank that uses them holds
  // rank 0's parameters and optimizer state (sync: identical updates; the parameter server:
  // rank 0's weights broadcast, only rank 0 steps the optimizer), so one copy restores every
  // rank; false (the default, always exact) makes a checkpoint keep every rank's.
  virtual bool replicas_identical() const { return false; }
  // What the strategy itself carries from one step to the next (weight_avg: the non-finite
  // losses since the last average; sync with compression: the error-feedback memory and
  // PowerSGD's warm-start Q), and taking it back in a resumed run before its first step, which
  // follows `steps_done` finished steps.
  virtual std::vector<float> checkpoint_state() const { return {}; }
  virtual void restore_checkpoint_state(const std::vector<float>& /*state*/, int64_t /*steps_done*/) {}
};

// The strategy for `options` (sync + ps -> the parameter server; sync + nccl -> NCCL on device
// arenas). Throws ConfigError if overlap is asked for but MPI lacks MPI_THREAD_SERIALIZED, the
// algorithm is not built, nccl meets host arenas or weight_avg, or device arenas meet a build
// without CUDA. Collective (nccl: the NCCL communicator is created on first use).
std::unique_ptr<ExchangeStrategy> make_exchange_strategy(Communicator& comm, ModelArenas arenas,
                                                         const ExchangeOptions& options);

}  // namespace ts
