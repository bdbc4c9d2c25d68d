// Impossible combinations of a run config (see resolve_steps.h); each value's range was
// checked when it was read (config/schema.h ValueRange, canonical_texts.cpp). What a
// particular binary or MPI world cannot honour (a backend not built, the world size) is checked
// when the run starts (train/capabilities.cpp), so configs stay valid on every machine.
#include <algorithm>

#include "config/registries.h"
#include "config/schema.h"
#include "config/resolve_steps.h"
#include "core/error.h"
#include "core/strings.h"

namespace ts {
namespace {

void check_exclusive(const ResolvedConfig& cfg, const std::vector<std::string>& keys) {
  std::vector<std::string> given;
  for (const auto& k : keys)
    if (cfg.where.count(k)) given.push_back(k);
  if (given.size() > 1)
    throw ConfigError(cfg.locate(given[1]) + ": conflicts with '" + given[0] + "'; give exactly one of " + join(keys));
}

void check_combinations(const ResolvedConfig& cfg, const KeyTexts& text) {
  const RunConfig& r = cfg.run;
  if (r.nesterov && r.momentum == 0)
    throw ConfigError(cfg.locate("nesterov") + ": Nesterov momentum needs momentum > 0");
  if (r.dist.strategy != DistStrategy::weight_avg && cfg.where.count("dist.period") && r.dist.period != 1)
    throw ConfigError(cfg.locate("dist.period") + ": " + text.at("dist.period") +
                      " applies to dist.strategy weight_avg only (" + text.at("dist.strategy") +
                      " exchanges gradients every step); remove it or set dist.strategy: weight_avg");
  for (const char* key : {"dist.servers", "dist.staleness"})
    if (r.dist.strategy != DistStrategy::async_ps && cfg.where.count(key))
      throw ConfigError(cfg.locate(key) + ": applies to dist.strategy async_ps only (the parameter servers and their "
                        "staleness bound; this run's strategy is " + text.at("dist.strategy") +
                        "); remove it or set dist.strategy: async_ps");
  if (r.dist.strategy != DistStrategy::hogwild && cfg.where.count("dist.threads_per_worker"))
    throw ConfigError(cfg.locate("dist.threads_per_worker") + ": applies to dist.strategy hogwild only (this run's "
                      "strategy is " + text.at("dist.strategy") + "); remove it or set dist.strategy: hogwild");
  if (r.dist.strategy == DistStrategy::hogwild && r.workers != 1)
    throw ConfigError(cfg.locate("workers") + ": dist.strategy hogwild runs its replicas as threads of one process "
                      "(dist.threads_per_worker); multi-rank hogwild is not implemented; set workers: 1");
  if ((r.dist.strategy == DistStrategy::async_ps || r.dist.strategy == DistStrategy::hogwild) &&
      r.effective_loss_scale() != LossScaleMode::off)
    throw ConfigError(cfg.locate(cfg.where.count("loss_scale.mode") ? "loss_scale.mode" : "precision") + ": " +
                      text.at("dist.strategy") + " applies gradients without unscaling them; use "
                      "loss_scale.mode: off (and a precision other than fp16)");
  if (r.dist.strategy == DistStrategy::weight_avg && r.dist.partition != PartitionKind::equal)
    throw ConfigError(cfg.locate("dist.partition") + ": unequal shares are weighted in the gradient exchange; "
                      "dist.strategy weight_avg averages weights unweighted; use dist.strategy sync or dist.partition equal");
  // async_ps lets each worker run at its own pace: shares are moot, but a slowed worker is how
  // the staleness bound is exercised. Hogwild's replicas are threads, not ranks to slow down.
  if (r.dist.strategy == DistStrategy::async_ps && r.dist.partition != PartitionKind::equal)
    throw ConfigError(cfg.locate("dist.partition") + ": unequal shares are for dist.strategy sync; async_ps lets each "
                      "worker run at its own pace already (dist.emulate_slowdown may slow one down); remove it");
  if (r.dist.strategy == DistStrategy::hogwild && r.dist.heterogeneous())
    throw ConfigError(cfg.locate(cfg.where.count("dist.partition") ? "dist.partition" : "dist.emulate_slowdown.rank") +
                      ": unequal shares and the emulated slowdown are for ranks; hogwild's replicas are threads of "
                      "one process; remove them");
  if (r.global_batch > 0 && r.dist.partition == PartitionKind::equal && r.global_batch % r.workers != 0)
    throw ConfigError(cfg.locate("global_batch") + ": " + text.at("global_batch") + " does not divide evenly over " +
                      std::to_string(r.workers) + " workers; use a multiple of workers or batch_per_worker");
  // Dynamic loss scaling changes the scale from the gradients every rank sees: under a parameter
  // server only rank 0 sees them, so the ranks' scales would drift apart.
  if (r.effective_loss_scale() == LossScaleMode::dynamic && r.dist.strategy == DistStrategy::sync &&
      r.dist.allreduce == AllreduceAlgorithm::ps && r.workers > 1)
    throw ConfigError(cfg.locate(cfg.where.count("loss_scale.mode") ? "loss_scale.mode" : "precision") +
                      ": dynamic loss scaling (the fp16 default) needs every rank to see the averaged gradients, and "
                      "dist.allreduce ps updates on rank 0 only; use another dist.allreduce or loss_scale.mode: static");
  const DataNames& data = data_names();
  const std::vector<std::string> ok = data.formats_of(r.dataset.name);
  if (std::find(ok.begin(), ok.end(), r.dataset.format) == ok.end()) {
    const bool later = std::find(data.reserved.begin(), data.reserved.end(), r.dataset.format) != data.reserved.end();
    throw ConfigError(cfg.locate("dataset.format") + ": format '" + r.dataset.format + "' " +
                      (later ? "is not implemented in this build" : "does not fit data set '" + r.dataset.name + "'") +
                      "; data set '" + r.dataset.name + "' accepts: " + join(ok) +
                      " (leave dataset.format out for its own format)");
  }
  if (r.dataset.shuffle_buffer > 0 && r.dataset.format != "records")
    throw ConfigError(cfg.locate("dataset.shuffle_buffer") + ": a shuffle buffer is for dataset.format records; '" +
                      r.dataset.format + "' is shuffled in full (leave dataset.shuffle_buffer out)");
}

// `gpu` against the backend: a CPU backend computes on no GPU, and a GPU backend on some GPU
// (which one the device check says when the run starts, train/capabilities.cpp).
// With ranks.backend, `gpu` is what the ranks on a GPU backend expect (any GPU rank: some GPU).
void check_gpu_against_backend(const ResolvedConfig& cfg) {
  const RunConfig& r = cfg.run;
  const std::string gpu = gpu_generation_name(r.gpu);
  const std::vector<BackendKind> backends = r.backends();
  const bool on_gpu = std::any_of(backends.begin(), backends.end(), backend_has_gpu);
  const std::string backend = join(r.backend_names(), "' and '");
  std::vector<std::string> gpus = accepted_gpu_generations();
  gpus.erase(std::remove(gpus.begin(), gpus.end(), "none"), gpus.end());
  if (!on_gpu && r.gpu != GpuGeneration::none)
    throw ConfigError(cfg.locate("gpu") + ": '" + gpu + "' expects " +
                      (r.gpu == GpuGeneration::any ? std::string("a GPU") : "GPU generation '" + gpu + "'") +
                      " but backend '" + backend + "' (" + cfg.locate(r.rank_backends.empty() ? "backend" : "ranks.backend") +
                      ") computes on the CPU (GPU generation none); set backend: cuda to run on " +
                      (r.gpu == GpuGeneration::any ? std::string("a GPU") : "a " + gpu) + ", or gpu: none");
  if (on_gpu && r.gpu == GpuGeneration::none)
    throw ConfigError(cfg.locate("gpu") + ": 'none' but backend '" + backend +
                      "' computes on a GPU; say which generation the run expects, or gpu: any (accepted: " +
                      join(gpus, " | ") + "; leaving gpu out means any)");
}

// A compressor's parameters apply to that compressor only, and compression to sync only
// (dist/exchange_strategy.cpp refuses the algorithms it does not run with).
void check_compression(const ResolvedConfig& cfg, const KeyTexts& text) {
  const CompressionOptions& c = cfg.run.dist.compression;
  const std::string kind = compression_kind_name(c.kind);
  const std::vector<std::pair<const char*, CompressionKind>> owners = {
      {"dist.qsgd_bits", CompressionKind::qsgd},    {"dist.qsgd_bucket", CompressionKind::qsgd},
      {"dist.topk_ratio", CompressionKind::topk},   {"dist.powersgd_rank", CompressionKind::powersgd},
      {"dist.powersgd_warm_start", CompressionKind::powersgd}};
  for (const auto& [key, owner] : owners)
    if (cfg.where.count(key) && c.kind != owner)
      throw ConfigError(cfg.locate(key) + ": applies to dist.compression " + compression_kind_name(owner) + ", and " +
                        "this run compresses with " + kind + "; remove it or set dist.compression: " +
                        compression_kind_name(owner));
  if (!c.enabled()) {
    for (const char* key : {"dist.error_feedback", "dist.compression_warmup_steps"})
      if (cfg.where.count(key))
        throw ConfigError(cfg.locate(key) + ": applies to compressed exchanges, and dist.compression is none; remove "
                          "it or set dist.compression (fp16, bf16, qsgd, topk, powersgd)");
    return;
  }
  if (cfg.run.dist.strategy != DistStrategy::sync)
    throw ConfigError(cfg.locate("dist.compression") + ": " + kind + " compresses the gradients of dist.strategy sync, not " +
                      text.at("dist.strategy") + "; set dist.compression: none or dist.strategy: sync");
  if (cfg.run.dist.allreduce == AllreduceAlgorithm::ps || cfg.run.dist.allreduce == AllreduceAlgorithm::nccl)
    throw ConfigError(cfg.locate("dist.compression") + ": " + kind + " is not implemented with dist.allreduce " +
                      text.at("dist.allreduce") + " (" + cfg.locate("dist.allreduce") +
                      "); use dist.allreduce mpi, ring, tree or shm, or dist.compression: none");
}

}  // namespace

// loss_reads: log holds the losses back, so nothing in the step may need this step's loss on the
// host: one rank of sync (its verdict is its own loss), or sync with dist.allreduce nccl (the
// losses combined on the device), without cuda.sync_phases (which reads it at once).
void check_loss_reads(const ResolvedConfig& cfg, const KeyTexts& text) {
  const RunConfig& r = cfg.run;
  if (r.loss_reads != LossReads::log) return;
  const std::string where = cfg.locate("loss_reads") + ": 'log' reads the loss every log_every steps only";
  const bool nccl = r.dist.allreduce == AllreduceAlgorithm::nccl;
  if (r.dist.strategy != DistStrategy::sync || (r.workers != 1 && !nccl) || r.dist.hetero_allreduce_device)
    throw ConfigError(where + ", which needs a step whose verdict is the rank's own loss (one worker of "
                      "dist.strategy sync) or whose losses are combined on the device (dist.strategy sync with "
                      "dist.allreduce nccl); this run has " + std::to_string(r.workers) +
                      " worker(s) of dist.strategy " + text.at("dist.strategy") + " with dist.allreduce " +
                      text.at("dist.allreduce") + (r.dist.hetero_allreduce_device ? " and dist.hetero_allreduce device" : "") +
                      ", whose exchange combines the losses on the host every step; remove loss_reads or set it to "
                      "step");
  if (r.cuda_sync_phases)
    throw ConfigError(where + ", and cuda.sync_phases: true reads it right after each forward; drop one of them");
}

// cuda.reduced_precision_reduction chooses among the graph API's engines; the legacy calls have
// no such choice, so the key would change nothing there.
void check_reduced_precision_reduction(const ResolvedConfig& cfg) {
  const RunConfig& r = cfg.run;
  if (r.cuda_reduced_precision_reduction && r.cuda_conv_api != ConvApi::graph)
    throw ConfigError(cfg.locate("cuda.reduced_precision_reduction") +
                      ": true selects among cuDNN's graph API engines, and this run plans its convolutions with the "
                      "legacy calls (cuda.conv_api unset or legacy); set cuda.conv_api: graph or remove the key");
}

void check_run_config(const ResolvedConfig& cfg, const KeyTexts& texts) {
  for (const auto& group : exclusive_key_groups()) check_exclusive(cfg, group);
  check_combinations(cfg, texts);  // ranges were checked with each value: workers > 0 divides global_batch
  check_rank_config(cfg);
  check_gpu_against_backend(cfg);
  check_partition_config(cfg, texts);
  check_compression(cfg, texts);
  check_loss_reads(cfg, texts);
  check_reduced_precision_reduction(cfg);
}

}  // namespace ts
