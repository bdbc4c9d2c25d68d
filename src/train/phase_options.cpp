// Each phase's options from the resolved config (see phase_options.h).
#include "train/phase_options.h"

#include <algorithm>

#include "core/rng.h"
#include "nn/models.h"

namespace ts {

LrOptions lr_options_of(const RunConfig& r) {
  const LrScheduleConfig& c = r.lr_schedule;
  LrOptions o;
  o.lr = r.lr;
  o.linear_scaling = c.scale == LrScale::linear;
  o.base_batch = c.base_batch;
  o.schedule.kind = lr_schedule_kind_name(c.kind);
  o.schedule.warmup_epochs = c.warmup_epochs;
  o.schedule.step_epochs = c.step_epochs;
  o.schedule.gamma = c.gamma;
  o.schedule.final_lr_fraction = c.final_lr_fraction;
  return o;
}

ExchangeOptions exchange_options_of(const RunConfig& r) {
  const DistConfig& dist = r.dist;
  ExchangeOptions options;
  options.strategy = dist.strategy;
  options.algorithm = dist.allreduce;
  options.bucket_elements = std::max<int64_t>(1, static_cast<int64_t>(dist.bucket_mb * 1024.0 * 1024.0 / sizeof(float)));
  options.overlap = dist.overlap;
  options.compression = dist.compression;
  options.device_sum = dist.hetero_allreduce_device;
  options.compression.seed = r.seed;
  options.async_ps.servers = dist.servers;
  options.async_ps.staleness = dist.staleness;
  return options;
}

DataOptions data_options_of(const RunConfig& r, const InputPreparation& prepared) {
  const DatasetConfig& c = r.dataset;
  const ModelInput model = model_expected_input(r.model);
  DataOptions options;
  options.name = c.name;
  options.format = c.format;
  options.root = prepared.root;
  options.storage = prepared.storage;
  options.endpoint = c.endpoint;
  options.blob_deadline_s = c.blob_deadline_s;
  options.blob_min_kib_s = c.blob_min_kib_s;
  options.seed = r.seed;
  options.synthetic_samples = c.synthetic_samples;
  options.synthetic = {model.sample, std::max<int64_t>(model.outputs, 1), 0};
  options.shuffle_buffer = c.shuffle_buffer;
  options.image_shape = model.sample;  // jpeg_dir transforms every image to the model's input
  options.test_fraction = c.test_fraction;
  return options;
}

RunDataOptions run_data_options_of(const ResolvedConfig& cfg) {
  const RunConfig& r = cfg.run;
  const DatasetConfig& d = r.dataset;
  InputPreparation unstaged;
  unstaged.root = d.root;
  unstaged.storage = d.storage;
  return RunDataOptions{data_options_of(r, unstaged),
                        cfg.locate(r.batch_per_worker > 0 ? "batch_per_worker" : "global_batch"),
                        d.shuffle,
                        seed_mix(r.seed, 1),  // the training loader's shuffle stream
                        d.loader_threads,
                        d.prefetch,
                        r.eval.batch};
}

DeviceOptions device_options_of(const ResolvedConfig& cfg) {
  const RunConfig& r = cfg.run;
  return DeviceOptions{r.backend,
                       r.threads,
                       r.precision,
                       r.gpu,
                       r.cuda_workspace_mb,
                       r.cuda_algorithms,
                       r.cuda_conv_api,
                       r.cuda_reduced_precision_reduction,
                       cfg.locate("backend"),
                       cfg.locate("precision"),
                       cfg.locate("gpu")};
}

PlanOptions plan_options_of(const ResolvedConfig& cfg) {
  const RunConfig& r = cfg.run;
  const char* length_key = r.steps > 0 ? "steps" : r.train_samples > 0 ? "train_samples" : "epochs";
  return PlanOptions{r.batch_per_worker, r.global_batch,         r.epochs,           r.steps,       r.train_samples,
                     cfg.locate(length_key), r.dist.partition, r.eval.every_epochs, r.dist.period};
}

ModelOptions model_options_of(const RunConfig& r) { return ModelOptions{r.model, r.seed, r.dropout}; }

MemoryOptions memory_options_of(const RunConfig& r) {
  const DistConfig& d = r.dist;
  return MemoryOptions{model_options_of(r), r.momentum,   r.batch_per_worker, r.global_batch,   d.partition,
                       d.shares,            d.share_quantum, r.eval.batch,    r.dataset.prefetch, d.strategy,
                       d.allreduce,         d.bucket_mb,  d.shm_chunk_kb,     d.shm_buffers,    r.threads,
                       r.dataset.loader_threads};
}

LoopOptions loop_options_of(const RunConfig& r, int rank) {
  const bool slow_rank = r.dist.emulate_slowdown_rank == rank;
  return LoopOptions{r.log_every, r.diverge_loss_above_factor, slow_rank ? r.dist.emulate_slowdown_factor : 1.0,
                     r.dataset.prefetch, {r.checkpoint.every_steps, r.checkpoint.every_minutes}};
}

SgdOptions sgd_options_of(const RunConfig& r) { return SgdOptions{r.momentum, r.weight_decay, r.nesterov}; }

}  // namespace ts
