// The run-config schema table (see schema.h and docs/config.md).
#include "config/schema.h"

#include <cmath>
#include <cstdio>
#include <cstdlib>

#include "config/registries.h"
#include "core/enum_names.h"
#include "core/strings.h"

namespace ts {

constexpr EnumName<ValueType> kValueTypes[] = {{ValueType::integer, "an integer"},
                                                {ValueType::number, "a number"},
                                                {ValueType::boolean, "true or false"},
                                                {ValueType::string, "a string"}};
const char* value_type_name(ValueType type) { return name_in(kValueTypes, type); }

namespace {

constexpr double kMega = 1 << 20;               // 1048576
constexpr double kGiga = 1 << 30;               // 1073741824
constexpr double kFloatMax = 3e38;  // about the largest fp32 (3.4e38): the learning rate is applied in fp32

ValueRange positive(double hi) { return {0, hi, true, false, true}; }   // (0, hi]
ValueRange closed(double lo, double hi) { return {lo, hi, false, false, true}; }
ValueRange below(double lo, double hi) { return {lo, hi, false, true, true}; }  // [lo, hi)

// Whole numbers as digits ("1048576"), others in their shortest spelling ("0.5", "3.4e+38").
std::string bound_text(double v) {
  char buf[64];
  if (v == std::floor(v) && std::fabs(v) < 1e16) {
    std::snprintf(buf, sizeof buf, "%.0f", v);
    return buf;
  }
  for (int digits = 1; digits <= 17; ++digits) {
    std::snprintf(buf, sizeof buf, "%.*g", digits, v);
    if (std::strtod(buf, nullptr) == v) break;
  }
  return buf;
}

}  // namespace

std::string range_text(ValueType type, const ValueRange& r) {
  if (!r.bounded) return "";
  if (type == ValueType::integer) {
    const double lo = r.lo_open ? r.lo + 1 : r.lo, hi = r.hi_open ? r.hi - 1 : r.hi;
    return bound_text(lo) + ".." + bound_text(hi);
  }
  return std::string(r.lo_open ? "(" : "[") + bound_text(r.lo) + ", " + bound_text(r.hi) + (r.hi_open ? ")" : "]");
}

std::string range_problem(const ValueRange& r, double v) {
  if (!r.bounded) return "";
  if (r.lo_open ? !(v > r.lo) : !(v >= r.lo)) return std::string("must be ") + (r.lo_open ? "> " : ">= ") + bound_text(r.lo);
  if (r.hi_open ? !(v < r.hi) : !(v <= r.hi)) return std::string("must be ") + (r.hi_open ? "< " : "at most ") + bound_text(r.hi);
  return "";
}

// dataset.*: what a run reads, in which format, from which storage.
std::vector<KeySpec> dataset_keys() {
  using T = ValueType;
  return {
      {"dataset.name", T::string, "fashion_mnist", [] { return data_names().datasets; }, "data set"},
      {"dataset.format", T::string, "", accepted_dataset_formats, "on-disk format (default: the data set's own)"},
      {"dataset.root", T::string, "/usr/share/datasets/fashion-mnist", {}, "data directory"},
      {"dataset.storage", T::string, "local", {}, "storage name (sites map it to a path)"},
      {"dataset.endpoint", T::string, "", {}, "blob storage: the S3 API's URL (empty: AWS_ENDPOINT_URL)"},
      // Unset (not "30"): a key with a default enters every config's canonical text, so its id.
      {"dataset.blob_deadline_s", T::number, "", {}, "blob storage: a request's time beyond its bytes at blob_min_kib_s (unset: 30)",
       positive(86400)},
      {"dataset.blob_min_kib_s", T::number, "", {}, "blob storage: the slowest transfer (KiB/s) a request may have (unset: 16)",
       positive(1e7)},
      {"dataset.synthetic_samples", T::integer, "8192", {}, "samples of synthetic data", positive(1 << 24)},
      {"dataset.loader_threads", T::integer, "1", {}, "loader worker threads per rank", positive(256)},
      {"dataset.prefetch", T::integer, "2", {}, "batches prepared ahead", positive(1024)},
      {"dataset.shuffle", T::boolean, "true", {}, "reshuffle every epoch"},
      {"dataset.test_fraction", T::number, "0.1", {}, "jpeg_dir ROOT/<class> layout: files held out as test",
       {0, 1, true, true, true}},
      {"dataset.shuffle_buffer", T::integer, "0", {}, "records: shuffle-buffer order of this many samples (0: full shuffle)",
       closed(0, 1 << 24)},
      {"dataset.stage", T::string, "none", [] { return std::vector<std::string>{"none", "node_local"}; },
       "copy the data set to node-local scratch before the run"},
      {"dataset.stage_dir", T::string, "", {}, "node-local scratch for dataset.stage (default: $TMPDIR or /tmp)"},
      {"dataset.cache", T::string, "warm", [] { return std::vector<std::string>{"warm", "cold"}; },
       "page cache of the data files before the run: read once (warm) or dropped (cold)"},
  };
}

const std::vector<KeySpec>& run_config_schema() {
  using T = ValueType;
  static const std::vector<KeySpec> specs = [] {
    std::vector<KeySpec> keys = {{"model", T::string, "lenet", accepted_model_names, "network to train"}};
    const std::vector<KeySpec> dataset = dataset_keys();
    keys.insert(keys.end(), dataset.begin(), dataset.end());
    const std::vector<KeySpec> rest = {
        {"batch_per_worker", T::integer, "", {}, "minibatch per worker (or global_batch)", positive(kMega)},
        {"global_batch", T::integer, "", {}, "minibatch over all workers (or batch_per_worker)", positive(kGiga)},
        {"lr", T::number, "0.01", {}, "learning rate", positive(kFloatMax)},
        {"lr_schedule.kind", T::string, "constant", accepted_lr_schedule_kinds, "LR schedule"},
        {"lr_schedule.warmup_epochs", T::number, "0", {}, "linear warm-up length", closed(0, 1e5)},
        {"lr_schedule.step_epochs", T::number, "1", {}, "step: decay period in epochs", positive(1e5)},
        {"lr_schedule.gamma", T::number, "0.1", {}, "step: decay factor", positive(1)},
        {"lr_schedule.final_lr_fraction", T::number, "0", {}, "cosine: final lr / lr", closed(0, 1)},
        {"lr_schedule.scale", T::string, "none", accepted_lr_scales, "LR scaling with batch"},
        {"lr_schedule.base_batch", T::integer, "0", {}, "batch that lr is tuned for", closed(0, kGiga)},
        {"momentum", T::number, "0.9", {}, "SGD momentum", below(0, 1)},
        {"nesterov", T::boolean, "false", {}, "Nesterov momentum"},
        {"weight_decay", T::number, "0", {}, "L2 weight decay", closed(0, 1)},
        {"dropout", T::number, "0", {}, "dropout probability at the model's dropout sites", below(0, 1)},
        {"epochs", T::number, "", {}, "training length in epochs (or steps / train_samples)", positive(1e5)},
        {"steps", T::integer, "", {}, "training length in steps", positive(1e9)},
        {"train_samples", T::integer, "", {}, "training length in samples (all workers)", positive(1e12)},
        {"precision", T::string, "fp32", accepted_precision_names, "compute precision"},
        {"loss_scale.mode", T::string, "auto", accepted_loss_scale_modes, "loss scaling (auto: dynamic for fp16)"},
        {"loss_scale.init", T::number, "65536", {}, "static scale, or the dynamic scale's start", positive(kFloatMax)},
        {"loss_scale.growth_interval", T::integer, "2000", {}, "dynamic: good steps before the scale doubles", positive(1e9)},
        {"cuda.workspace_mb", T::integer, "512", {}, "cuda: most workspace one op's algorithm may use (MiB)", closed(0, kMega)},
        {"flush_denormals", T::boolean, "", {}, "CPU threads flush denormal floats to zero (FTZ + DAZ; unset: true)"},
        {"cuda.graphs", T::boolean, "false", {}, "cuda: record the training forward once as a CUDA graph, replay it"},
        {"cuda.sync_phases", T::boolean, "", {},
         "cuda: wait for the device after forward and after backward, so /timing's forward and backward are its own (unset: false)"},
        {"cuda.conv_api", T::string, "", accepted_conv_api_names,
         "cuda: cuDNN's convolutions through its legacy calls or its graph API's engines (unset: legacy)"},
        {"cuda.reduced_precision_reduction", T::boolean, "", {},
         "cuda, conv_api graph: also engines that reduce in fp16/bf16, as PyTorch allows (unset: false)"},
        {"cuda.algorithms", T::string, "", accepted_algorithm_choice_names,
         "cuda: how cuDNN algorithms are chosen (unset: find; deterministic: bit-reproducible)"},
        {"backend", T::string, "cpu", accepted_backend_names, "compute backend"},
        {"threads", T::integer, "2", {}, "compute threads per worker", positive(1024)},
        {"workers", T::integer, "1", {}, "expected MPI world size", positive(1e6)},
        // Per-rank settings (docs/heterogeneous.md "Ranks of different kinds"): one entry per worker;
        // `ranks: [{backend: cpu, threads: 16}, {backend: cuda}]` is read into these two lists.
        {"ranks.backend", T::string, "", {}, "each rank's backend, one per worker, e.g. [cpu, cuda] (unset: backend)", {}, true},
        {"ranks.threads", T::string, "", {}, "each rank's compute threads, one per worker (unset: threads)", {}, true},
        {"dist.strategy", T::string, "sync", accepted_strategy_names, "gradient exchange"},
        {"dist.allreduce", T::string, "ring", accepted_allreduce_names, "all-reduce algorithm"},
        {"dist.bucket_mb", T::number, "25", {}, "gradient bucket size in MiB", positive(65536)},
        {"dist.overlap", T::boolean, "true", {}, "overlap all-reduce with backward"},
        {"dist.period", T::integer, "1", {}, "weight_avg: steps between averages", positive(1e9)},
        {"dist.shm_chunk_kb", T::integer, "32", {}, "shm: KiB per pipeline buffer", positive(65536)},
        {"dist.shm_buffers", T::integer, "64", {}, "shm: pipeline buffers per rank", positive(1024)},
        {"dist.timeout_s", T::number, "600", {}, "seconds any exchange may wait for the other ranks (0: unbounded)", closed(0, 1e6)},
        // Heterogeneous workers (docs/heterogeneous.md): unset keys stay out of the resolved config.
        {"dist.partition", T::string, "", accepted_partition_names, "shares of the global batch (unset: equal)"},
        {"dist.shares", T::string, "", {}, "static: each rank's samples per step, e.g. [96, 32]", {}, true},
        {"dist.calibration_steps", T::integer, "", {}, "measured/adaptive: steps timed before the first balance (unset: 5)", positive(1e6)},
        {"dist.rebalance_steps", T::integer, "", {}, "adaptive: steps between re-balances (unset: 50)", positive(1e9)},
        {"dist.share_quantum", T::integer, "", {}, "measured/adaptive: shares are multiples of it (unset: 1)", positive(kMega)},
        {"dist.emulate_slowdown.rank", T::integer, "", {}, "testing: the rank that computes slower (unset: none)", below(0, 1e6)},
        {"dist.emulate_slowdown.factor", T::number, "", {}, "testing: its compute time x factor (unset: 2)", closed(1, 1000)},
        {"dist.hetero_allreduce", T::string, "", accepted_hetero_allreduce_names, "where mixed ranks sum gradients (unset: host)"},
        {"dist.compression", T::string, "", accepted_compression_names, "sync: gradient compression (unset: none)"},
        {"dist.qsgd_bits", T::integer, "", {}, "qsgd: bits per element, sign included (unset: 8)", closed(2, 8)},
        {"dist.qsgd_bucket", T::integer, "", {}, "qsgd: elements per norm (unset: 512)", positive(kMega)},
        {"dist.topk_ratio", T::number, "", {}, "topk: fraction of each bucket sent (unset: 0.01)", positive(1)},
        {"dist.powersgd_rank", T::integer, "", {}, "powersgd: rank r of P and Q (unset: 4)", positive(1024)},
        {"dist.powersgd_warm_start", T::boolean, "", {}, "powersgd: keep Q between steps (unset: true)"},
        {"dist.error_feedback", T::string, "", accepted_error_feedback_modes, "compression: error feedback (unset: auto, on for topk and powersgd)"},
        {"dist.compression_warmup_steps", T::integer, "", {}, "compression: first steps sent uncompressed (unset: 0)", closed(0, 1e9)},
        {"dist.servers", T::integer, "", {}, "async_ps: parameter-server ranks beyond the workers (unset: 1)", positive(1024)},
        {"dist.staleness", T::integer, "", {}, "async_ps: steps the fastest worker may lead the slowest (unset: 0)", closed(0, 1000)},
        {"dist.threads_per_worker", T::integer, "", {}, "hogwild: threads sharing one weight arena (unset: 1)", positive(256)},
        {"gpu", T::string, "", accepted_gpu_generations,
         "expected GPU generation (default: any for backend cuda, else none)"},
        {"mpi_flavor", T::string, "any", accepted_mpi_flavors, "expected MPI library"},
        {"eval.every_epochs", T::number, "1", {}, "evaluation period in epochs (0 = never)", closed(0, 1e5)},
        {"eval.target_accuracy", T::number, "0.9", {}, "accuracy for time_to_target", closed(0, 1)},
        {"eval.batch", T::integer, "0", {}, "evaluation minibatch (0 = the training batch per worker)", closed(0, kMega)},
        {"checkpoint.every_steps", T::integer, "", {}, "checkpoint every N steps (unset or 0: off)", closed(0, 1e9)},
        {"checkpoint.every_minutes", T::number, "", {}, "checkpoint every N minutes (unset or 0: off; 525600 is a year)", closed(0, 525600)},
        {"checkpoint.keep", T::boolean, "", {}, "keep the checkpoints when the run completes (unset: false)"},
        {"seed", T::integer, "1", {}, "random seed", closed(0, 9007199254740992.0)},
        {"log_every", T::integer, "20", {}, "progress line period in steps", positive(1e9)},
        {"diverge.loss_above_factor", T::number, "", {},
         "a logged loss above this many times the loss at the start ends the run as diverged, exit 3 "
         "(unset: a warning at 10x)", {1, 1e30, true, false, true}},
        {"loss_reads", T::string, "", accepted_loss_reads,
         "when the host reads the loss: every step, or every log_every steps (unset: log on one cuda rank of sync)"},
        {"logging.mllog", T::string, "", {},
         "write the run's MLPerf logging stream (:::MLLOG lines) to this file when it ends (unset: none)"},
        {"metrics.au_threshold", T::number, "", {},
         "accelerator utilisation a run must reach on its least utilised rank (au_pass; unset: no verdict)", closed(0, 1)},
    };
    keys.insert(keys.end(), rest.begin(), rest.end());
    return keys;
  }();
  return specs;
}

const KeySpec* find_key_spec(const std::string& key) {
  for (const auto& s : run_config_schema())
    if (s.key == key) return &s;
  return nullptr;
}

const std::vector<std::vector<std::string>>& exclusive_key_groups() {
  static const std::vector<std::vector<std::string>> groups = {{"batch_per_worker", "global_batch"},
                                                               {"epochs", "steps", "train_samples"}};
  return groups;
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
