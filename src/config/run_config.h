// The run configuration (docs/config.md), typed.
// Parsed from YAML plus `--set key=value` overrides, checked against a schema of every key
// (config/schema.h: type, accepted values, default), resolved (defaults filled in, derived
// defaults computed) and turned into this struct once: enum-like keys are C++ enums here, so
// nothing downstream compares strings. Errors are ConfigError naming the file, line, key, what
// is accepted and what to do.
#pragma once

#include <cstdint>
#include <limits>
#include <map>
#include <string>
#include <vector>

#include "backend/backend.h"          // Precision
#include "dist/allreduce.h"           // AllreduceAlgorithm
#include "dist/batch_partition.h"     // PartitionKind
#include "dist/exchange_strategy.h"   // DistStrategy
#include "config/dataset_config.h"
#include "config/run_enums.h"

namespace ts {

struct LrScheduleConfig {
  LrScheduleKind kind = LrScheduleKind::constant;
  double warmup_epochs = 0.0;
  double step_epochs = 1.0;       // step: decay every step_epochs
  double gamma = 0.1;             // step: decay factor
  double final_lr_fraction = 0.0; // cosine: final lr / lr
  LrScale scale = LrScale::none;
  int64_t base_batch = 0;         // reference batch of `lr` for scale: linear (0 = the global batch)
};

struct LossScaleConfig {
  LossScaleMode mode = LossScaleMode::auto_;
  double init = 65536.0;          // the static scale, or the dynamic one's start
  int64_t growth_interval = 2000; // dynamic: good steps before the scale doubles
};

struct DistConfig {
  DistStrategy strategy = DistStrategy::sync;
  AllreduceAlgorithm allreduce = AllreduceAlgorithm::ring;
  double bucket_mb = 25.0;
  bool overlap = true;
  int64_t period = 1;         // weight_avg: average every `period` steps
  int64_t shm_chunk_kb = 32;  // shm: bytes per pipeline buffer, in KiB
  int64_t shm_buffers = 64;   // shm: pipeline buffers per rank
  double timeout_s = 600.0;   // a wait for the other ranks longer than this ends the job (0: unbounded)
  // Heterogeneous workers (docs/heterogeneous.md): shares of the global batch per rank.
  PartitionKind partition = PartitionKind::equal;
  std::vector<int64_t> shares;    // static: samples per step of each rank (sum: the global batch)
  int64_t calibration_steps = 5;  // measured / adaptive: steps timed before the first balance
  int64_t rebalance_steps = 50;   // adaptive: steps between re-balances
  int64_t share_quantum = 1;      // measured / adaptive: shares are multiples of it
  int emulate_slowdown_rank = -1;        // testing: this rank computes `factor` x slower (-1: none)
  double emulate_slowdown_factor = 2.0;
  bool hetero_allreduce_device = false;  // dist.hetero_allreduce: device (needs CUDA; host otherwise)
  bool ranks_differ = false;  // ranks.backend / ranks.threads give the ranks different settings
  bool heterogeneous() const {
    return partition != PartitionKind::equal || emulate_slowdown_rank >= 0 || ranks_differ;
  }
  // Gradient compression of sync (dist/compression_options.h; keys unset unless given, so
  // configs without them keep their config_id). The arena's matrices and the seed are added
  // when the exchange is set up.
  CompressionOptions compression;
  int servers = 1;            // async_ps: parameter-server ranks beyond the workers
  int64_t staleness = 0;      // async_ps: steps the fastest worker may run ahead of the slowest
  int64_t threads_per_worker = 1;  // hogwild: replicas (threads) sharing one weight arena
};

struct EvalConfig {
  double every_epochs = 1.0;
  double target_accuracy = 0.90;
  int64_t batch = 0;  // resolved: > 0 (0 or unset in the file = the training batch per worker)
};

// Checkpoints (docs/reliability.md "Checkpoint and resume"). Unset keys stay out of the
// resolved config, so a run without checkpoints keeps the config_id it always had.
struct CheckpointConfig {
  int64_t every_steps = 0;    // 0: off
  double every_minutes = 0;   // 0: off
  bool keep = false;          // keep the checkpoints once the run has completed
  bool enabled() const { return every_steps > 0 || every_minutes > 0; }
};

struct RunConfig {
  std::string model = "lenet";  // a name of the model registry (nn/models.h)
  DatasetConfig dataset;
  int64_t batch_per_worker = 0;  // exactly one of batch_per_worker / global_batch is set (> 0)
  int64_t global_batch = 0;
  double lr = 0.01;  // 0.05 until issue 34: with momentum 0.9 it blew LeNet up (docs/config.md)
  LrScheduleConfig lr_schedule;
  double momentum = 0.9;
  bool nesterov = false;
  double weight_decay = 0.0;
  double dropout = 0.0;
  double epochs = 0.0;           // exactly one of epochs / steps / train_samples is set (> 0)
  int64_t steps = 0;
  int64_t train_samples = 0;
  Precision precision = Precision::fp32;
  LossScaleConfig loss_scale;
  BackendKind backend = BackendKind::cpu;
  bool cuda_graphs = false;
  bool flush_denormals = true;  // core/float_environment.h: FTZ + DAZ on the threads that compute
  int64_t cuda_workspace_mb = 512;  // cuda: workspace bound per op (algorithms needing more are not chosen)
  AlgorithmChoice cuda_algorithms = AlgorithmChoice::find;  // cuda.algorithms (unset: find)
  ConvApi cuda_conv_api = ConvApi::legacy;                   // cuda.conv_api (unset: legacy)
  bool cuda_reduced_precision_reduction = false;             // cuda.reduced_precision_reduction (unset: false)
  bool cuda_sync_phases = false;  // cuda.sync_phases: read the loss after forward, wait for the device after backward (exact split)
  LossReads loss_reads = LossReads::auto_;  // loss_reads (unset: auto, decided at set-up)
  int threads = 2;
  int workers = 1;
  // ranks.backend / ranks.threads: one entry per worker (empty: every rank takes backend /
  // threads). for_rank() gives one rank's view.
  std::vector<BackendKind> rank_backends;
  std::vector<int> rank_threads;
  DistConfig dist;
  GpuGeneration gpu = GpuGeneration::none;
  MpiFlavor mpi_flavor = MpiFlavor::any;
  EvalConfig eval;
  CheckpointConfig checkpoint;
  uint64_t seed = 1;
  int64_t log_every = 20;
  // diverge.loss_above_factor: a logged loss above this many times the loss at the start ends
  // the run as diverged (train/loss_watch.h); 0: unset (the loss watch only warns).
  double diverge_loss_above_factor = 0;
  std::string mllog_path;  // logging.mllog: where the MLPerf logging stream goes ("": nowhere)
  double au_threshold = std::numeric_limits<double>::quiet_NaN();  // metrics.au_threshold (NaN: unset)

  // The loss scaling this run applies: auto resolves to dynamic for fp16, off otherwise.
  LossScaleMode effective_loss_scale() const {
    if (loss_scale.mode != LossScaleMode::auto_) return loss_scale.mode;
    return precision == Precision::fp16 ? LossScaleMode::dynamic : LossScaleMode::off;
  }
  // The backends the ranks compute on, each once, in rank order ({backend} without ranks.backend).
  std::vector<BackendKind> backends() const;
  std::vector<std::string> backend_names() const;
  // True when ranks.backend puts the ranks on more than one backend.
  bool mixed_backends() const { return backends().size() > 1; }
  // This run as rank `rank` runs it: its backend and threads from ranks.*, and in a run that
  // mixes backends, gpu none on a rank whose backend computes on no GPU.
  RunConfig for_rank(int rank) const;
  // Per-worker batch on `world` ranks.
  int64_t batch_for(int world) const { return batch_per_worker > 0 ? batch_per_worker : global_batch / world; }
  // Global batch of a step on `world` ranks.
  int64_t global_batch_for(int64_t world) const { return global_batch > 0 ? global_batch : batch_per_worker * world; }
};

// A parsed, validated and resolved configuration: the typed struct plus the canonical
// resolved YAML text (every key, defaults filled in, schema order) and its flattened form.
struct ResolvedConfig {
  RunConfig run;
  std::string yaml;                           // canonical resolved YAML (stable: hashing, HDF5)
  std::map<std::string, std::string> flat;    // "dist.allreduce" -> "ring"
  std::string origin;                         // file the config came from
  std::map<std::string, std::string> where;   // key -> "file:line" or "--set key=value"

  // "configs/x.yaml:12: key 'precision'" for messages about a key's value.
  std::string locate(const std::string& key) const;
  // The config rank `rank` runs (RunConfig::for_rank); `backend` and `threads` are located at
  // ranks.backend / ranks.threads where those set them.
  ResolvedConfig for_rank(int rank) const;
};

// Reads `path`, applies `overrides` ("key=value" with dotted keys) and resolves.
ResolvedConfig load_run_config(const std::string& path, const std::vector<std::string>& overrides);
// Same from YAML text; `origin` names the source in messages (a file name or "<manifest>").
ResolvedConfig parse_run_config(const std::string& yaml_text, const std::string& origin,
                                const std::vector<std::string>& overrides);

}  // namespace ts
