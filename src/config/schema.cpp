// The run-config schema table (see schema.h and docs/config.md).
#include "config/schema.h"

#include "config/registries.h"
#include "core/strings.h"

namespace ts {

const char* value_type_name(ValueType type) {
  switch (type) {
    case ValueType::integer: return "an integer";
    case ValueType::number: return "a number";
    case ValueType::boolean: return "true or false";
    case ValueType::string: return "a string";
  }
  return "?";
}

const std::vector<KeySpec>& run_config_schema() {
  using T = ValueType;
  static const std::vector<KeySpec> specs = {
      {"model", T::string, "lenet", accepted_model_names, "network to train"},
      {"dataset.name", T::string, "fashion_mnist", [] { return data_names().datasets; }, "data set"},
      {"dataset.format", T::string, "", accepted_dataset_formats, "on-disk format (default: the data set's own)"},
      {"dataset.root", T::string, "/usr/share/datasets/fashion-mnist", {}, "data directory"},
      {"dataset.storage", T::string, "local", {}, "storage name (sites map it to a path)"},
      {"dataset.synthetic_samples", T::integer, "8192", {}, "samples of synthetic data"},
      {"dataset.loader_threads", T::integer, "1", {}, "loader worker threads per rank"},
      {"dataset.prefetch", T::integer, "2", {}, "batches prepared ahead"},
      {"dataset.shuffle", T::boolean, "true", {}, "reshuffle every epoch"},
      {"batch_per_worker", T::integer, "", {}, "minibatch per worker (or global_batch)"},
      {"global_batch", T::integer, "", {}, "minibatch over all workers (or batch_per_worker)"},
      {"lr", T::number, "0.05", {}, "learning rate"},
      {"lr_schedule.kind", T::string, "constant", accepted_lr_schedule_kinds, "LR schedule"},
      {"lr_schedule.warmup_epochs", T::number, "0", {}, "linear warm-up length"},
      {"lr_schedule.step_epochs", T::number, "1", {}, "step: decay period in epochs"},
      {"lr_schedule.gamma", T::number, "0.1", {}, "step: decay factor"},
      {"lr_schedule.final_lr_fraction", T::number, "0", {}, "cosine: final lr / lr"},
      {"lr_schedule.scale", T::string, "none", accepted_lr_scales, "LR scaling with batch"},
      {"lr_schedule.base_batch", T::integer, "0", {}, "batch that lr is tuned for"},
      {"momentum", T::number, "0.9", {}, "SGD momentum"},
      {"nesterov", T::boolean, "false", {}, "Nesterov momentum"},
      {"weight_decay", T::number, "0", {}, "L2 weight decay"},
      {"dropout", T::number, "0", {}, "dropout probability at the model's dropout sites"},
      {"epochs", T::number, "", {}, "training length in epochs (or steps / train_samples)"},
      {"steps", T::integer, "", {}, "training length in steps"},
      {"train_samples", T::integer, "", {}, "training length in samples (all workers)"},
      {"precision", T::string, "fp32", accepted_precision_names, "compute precision"},
      {"loss_scale.mode", T::string, "auto", accepted_loss_scale_modes, "loss scaling (auto: dynamic for fp16)"},
      {"loss_scale.init", T::number, "65536", {}, "static scale, or the dynamic scale's start"},
      {"loss_scale.growth_interval", T::integer, "2000", {}, "dynamic: good steps before the scale doubles"},
      {"cuda.workspace_mb", T::integer, "512", {}, "cuda: most workspace one op's algorithm may use (MiB)"},
      {"cuda.graphs", T::boolean, "false", {}, "cuda: record the training forward once as a CUDA graph, replay it"},
      {"backend", T::string, "cpu", accepted_backend_names, "compute backend"},
      {"threads", T::integer, "2", {}, "compute threads per worker"},
      {"workers", T::integer, "1", {}, "expected MPI world size"},
      {"dist.strategy", T::string, "sync", accepted_strategy_names, "gradient exchange"},
      {"dist.allreduce", T::string, "ring", accepted_allreduce_names, "all-reduce algorithm"},
      {"dist.bucket_mb", T::number, "25", {}, "gradient bucket size in MiB"},
      {"dist.overlap", T::boolean, "true", {}, "overlap all-reduce with backward"},
      {"dist.period", T::integer, "1", {}, "weight_avg: steps between averages"},
      {"dist.shm_chunk_kb", T::integer, "32", {}, "shm: KiB per pipeline buffer"},
      {"dist.shm_buffers", T::integer, "64", {}, "shm: pipeline buffers per rank"},
      {"gpu", T::string, "", accepted_gpu_generations,
       "expected GPU generation (default: any for backend cuda, else none)"},
      {"mpi_flavor", T::string, "any", accepted_mpi_flavors, "expected MPI library"},
      {"eval.every_epochs", T::number, "1", {}, "evaluation period in epochs (0 = never)"},
      {"eval.target_accuracy", T::number, "0.9", {}, "accuracy for time_to_target"},
      {"eval.batch", T::integer, "0", {}, "evaluation minibatch (0 = the training batch per worker)"},
      {"checkpoint.every_steps", T::integer, "", {}, "checkpoint every N steps (unset or 0: off)"},
      {"checkpoint.every_minutes", T::number, "", {}, "checkpoint every N minutes (unset or 0: off)"},
      {"checkpoint.keep", T::boolean, "", {}, "keep the checkpoints when the run completes (unset: false)"},
      {"seed", T::integer, "1", {}, "random seed"},
      {"log_every", T::integer, "20", {}, "progress line period in steps"},
  };
  return specs;
}

const KeySpec* find_key_spec(const std::string& key) {
  for (const auto& s : run_config_schema())
    if (s.key == key) return &s;
  return nullptr;
}

bool is_key_group(const std::string& prefix) {
  for (const auto& s : run_config_schema())
    if (starts_with(s.key, prefix + ".")) return true;
  return false;
}

std::vector<std::string> run_config_keys() {
  std::vector<std::string> keys;
  for (const auto& s : run_config_schema()) keys.push_back(s.key);
  return keys;
}

const std::map<std::string, std::string>& removed_run_config_keys() {
  static const std::map<std::string, std::string> removed = {
      {"dist.update",
       "was removed: the sharded optimizer update measured no faster than every rank updating all weights "
       "(which all runs now do); delete the key"},
  };
  return removed;
}

}  // namespace ts
