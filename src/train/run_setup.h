// train-internal: the "set up" phase of a run: everything the timed loop needs, built once
// before it (backend, data, model, optimizer, exchange strategy, learning rate, step counts),
// nothing of it timed as training.
#pragma once

#include <algorithm>
#include <cstdint>
#include <memory>

#include "backend/backend.h"
#include "config/dataset_config.h"
#include "config/run_enums.h"
#include "dist/allreduce.h"
#include "dist/batch_partition.h"
#include "dist/communicator.h"
#include "dist/device_loss_combiner.h"
#include "dist/exchange_strategy.h"
#include "dist/message_boundary.h"
#include "dist/outside_peers.h"
#include "dist/remote_model.h"
#include "nn/net.h"
#include "nn/optimizer.h"
#include "train/data_setup.h"
#include "train/device_check.h"
#include "train/hogwild_crew.h"
#include "train/learning_rate.h"
#include "train/loop.h"
#include "train/loss_scaler.h"
#include "train/memory_estimate.h"
#include "train/model_options.h"
#include "train/share_balancer.h"
#include "train/staged_input.h"

namespace ts {

// The step counts of a run.
struct RunPlan {
  int64_t batch = 0;            // per worker (this rank's first share with dist.partition)
  int64_t global_batch = 0;     // all workers
  int64_t steps_per_epoch = 0;
  int64_t total_steps = 0;
  int64_t eval_period = 0;      // steps between evaluations (0: never)
  int64_t average_period = 1;   // weight_avg: steps between weight averages
};

// What the step counts take of the run's settings.
struct PlanOptions {
  int64_t batch_per_worker = 0, global_batch = 0;  // exactly one is set (> 0)
  double epochs = 0;                               // exactly one of epochs / steps / train_samples
  int64_t steps = 0, train_samples = 0;            // is set (> 0)
  std::string length_key;                          // ... located: the one set
  PartitionKind partition = PartitionKind::equal;  // unequal: global_batch is the global batch
  double eval_every_epochs = 1.0;
  int64_t average_period = 1;                      // dist.period
  int64_t batch_for(int world) const { return batch_per_worker > 0 ? batch_per_worker : global_batch / world; }
};

// What set_up_run takes of the run's settings: each phase's own options, packed once where the
// config is (train/trainer.cpp, from train/phase_options.h); set-up and the phases it builds
// never see the config. Keys a refusal names come located (ResolvedConfig::locate).
struct SetupOptions {
  DeviceOptions device;
  DatasetConfig dataset;      // input preparation's: staging, the page cache
  RunDataOptions data;        // data.source reads dataset.root until input preparation says where
  PlanOptions plan;
  ModelOptions model;
  MemoryOptions memory;
  LoopOptions loop;
  ShareOptions shares;
  SgdOptions sgd;
  LossScaleOptions loss_scale;
  LrOptions lr;
  ShmWindowOptions shm;
  ExchangeOptions exchange;   // async_ps's servers and staleness, compression's seed; the rest at set-up
  int hogwild_replicas = 1;   // hogwild: dist.threads_per_worker
  bool cuda_graphs = false;
  std::string cuda_graphs_key;  // located
  LossReads loss_reads = LossReads::auto_;
  std::string loss_reads_key;   // located
  bool cuda_sync_phases = false;
  bool mixed_backends = false;  // ranks.backend puts the ranks on more than one backend
};

// Members in construction order (each refers only to earlier ones); destroyed in reverse.
struct RunSetup {
  std::unique_ptr<Backend> backend;
  std::unique_ptr<RunData> data;
  std::unique_ptr<Net> net;
  std::unique_ptr<Sgd> sgd;
  std::unique_ptr<ExchangeStrategy> exchange;  // every rank holds rank 0's initial model
  // What only some strategies do, asked of `exchange` once (null where it does not).
  RemoteModel* remote_model = nullptr;          // async_ps: the model lives on its servers
  MessageBoundary* message_boundary = nullptr;  // async_ps: step boundaries agreed by messages
  DeviceLossCombiner* device_losses = nullptr;  // nccl: the losses combined on the device
  OutsidePeers* outside_peers = nullptr;        // async_ps, hogwild: told when this rank leaves
  std::unique_ptr<LearningRate> lr;
  std::unique_ptr<LossScaler> scaler;
  std::unique_ptr<StagedInput> staged;  // overlapped input copies (devices the host cannot address)
  // A staged rank that waits for its device after forward and after backward (TrainState::
  // wait_for_device): heterogeneous shares are decided from its compute time, or cuda.sync_phases.
  bool waits_for_device = false;
  LossReads loss_reads = LossReads::step;  // resolved (train/loss_ledger.h); the run file records it
  std::unique_ptr<ShareBalancer> shares;  // the ranks' shares of the global batch
  std::unique_ptr<HogwildCrew> hogwild;  // hogwild: the replicas beyond the main thread's (last: stopped first)
  RunPlan plan;
  LoopOptions loop;
  // Between steps every rank holds the same parameter and momentum bits (checkpoints then keep
  // one copy): the strategy's replicas_identical(), unless the ranks run backends of different
  // kinds, whose optimizers may round the same update differently.
  bool replicas_identical = false;
  MemoryEstimate memory;     // this rank's estimated peak, checked against...
  MemoryBound memory_bound;  // ... the memory it may use (both recorded in the run file)
  // The most device memory the run used above memory.device.used_at_check, sampled after the
  // first step, at log steps, at the evaluation batch and at the end (0: a host backend).
  int64_t device_peak = 0;
  void note_device_memory(int64_t used) {
    if (memory.device.applies) device_peak = std::max(device_peak, used - memory.device.used_at_check);
  }
};

// ConfigError for what this build, world or device cannot do; RuntimeError for failures.
// `first_step`: steps already taken (a resumed run): the training loader starts at that batch.
// async_ps: `comm` holds the workers and `ps_world` the workers and servers.
// `resumed_shares`: a resumed run's shares of the global batch (heterogeneous workers), else null.
std::unique_ptr<RunSetup> set_up_run(const SetupOptions& options, Communicator& comm, int64_t first_step = 0,
                                     const ShareState* resumed_shares = nullptr,
                                     Communicator* ps_world = nullptr);

// The conv and fully connected weight matrices of the net's parameter arena (PowerSGD's).
std::vector<WeightMatrix> weight_matrices_of(Net& net);
// Where `backend` keeps a net's arenas, for the exchange strategy: host memory, or (cuda) the
// device and the stream the backend computes on.
ArenaDevice arena_device_of(Backend& backend);
// The exchange strategy for `net` as a run sets it up (tests use it too): with shm on several
// ranks and sync on host arenas, the gradient arena moves into node shared memory, where shm
// sums the buckets in place (no copy into its pipeline: what meets the busbw bar,
// docs/strategies.md); device arenas (backend cuda) go with the backend's device and stream;
// every rank then takes rank 0's model; PowerSGD gets the net's weight matrices. Collective.
std::unique_ptr<ExchangeStrategy> set_up_exchange(const ExchangeOptions& options, Net& net, Communicator& comm);

}  // namespace ts
