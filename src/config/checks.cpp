// Impossible combinations of a run config (see resolve_steps.h); each value's range was
// checked when it was read (config/schema.h ValueRange, canonical_texts.cpp). What a
// particular binary or MPI world cannot honour (a backend not built, the world size) is checked
// when the run starts (train/capabilities.cpp), so configs stay valid on every machine.
#include <algorithm>

#include "config/registries.h"
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
  if (r.dist.strategy == DistStrategy::weight_avg && r.dist.partition != PartitionKind::equal)
    throw ConfigError(cfg.locate("dist.partition") + ": unequal shares are weighted in the gradient exchange; "
                      "dist.strategy weight_avg averages weights unweighted; use dist.strategy sync or dist.partition equal");
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
}

// `gpu` against the backend: a CPU backend computes on no GPU, and a GPU backend on some GPU
// (which one the device check says when the run starts, train/capabilities.cpp).
void check_gpu_against_backend(const ResolvedConfig& cfg) {
  const RunConfig& r = cfg.run;
  const std::string gpu = gpu_generation_name(r.gpu);
  const std::string backend = backend_kind_name(r.backend);
  std::vector<std::string> gpus = accepted_gpu_generations();
  gpus.erase(std::remove(gpus.begin(), gpus.end(), "none"), gpus.end());
  if (!backend_has_gpu(r.backend) && r.gpu != GpuGeneration::none)
    throw ConfigError(cfg.locate("gpu") + ": '" + gpu + "' expects " +
                      (r.gpu == GpuGeneration::any ? std::string("a GPU") : "GPU generation '" + gpu + "'") +
                      " but backend '" + backend + "' (" + cfg.locate("backend") +
                      ") computes on the CPU (GPU generation none); set backend: cuda to run on " +
                      (r.gpu == GpuGeneration::any ? std::string("a GPU") : "a " + gpu) + ", or gpu: none");
  if (backend_has_gpu(r.backend) && r.gpu == GpuGeneration::none)
    throw ConfigError(cfg.locate("gpu") + ": 'none' but backend '" + backend +
                      "' computes on a GPU; say which generation the run expects, or gpu: any (accepted: " +
                      join(gpus, " | ") + "; leaving gpu out means any)");
}

}  // namespace

void check_run_config(const ResolvedConfig& cfg, const KeyTexts& texts) {
  check_exclusive(cfg, {"batch_per_worker", "global_batch"});
  check_exclusive(cfg, {"epochs", "steps", "train_samples"});
  check_combinations(cfg, texts);  // ranges were checked with each value: workers > 0 divides global_batch
  check_gpu_against_backend(cfg);
  check_partition_config(cfg, texts);
}

}  // namespace ts
