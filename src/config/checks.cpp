// Value ranges and impossible combinations of a run config (see resolve_steps.h). What a
// particular binary or MPI world cannot honour (a backend not built, the world size) is checked
// when the run starts (train/capabilities.cpp), so configs stay valid on every machine.
#include <algorithm>

#include "config/registries.h"
#include "config/resolve_steps.h"
#include "core/error.h"
#include "core/strings.h"

namespace ts {
namespace {

void check_ranges(const ResolvedConfig& cfg, const KeyTexts& text) {
  const RunConfig& r = cfg.run;
  auto where = [&](const std::string& k) { return cfg.locate(k); };
  auto positive = [&](const std::string& k, double v) {
    if (text.count(k) && !(v > 0)) throw ConfigError(where(k) + ": must be > 0, got " + text.at(k));
  };
  auto non_negative = [&](const std::string& k, double v) {
    if (!(v >= 0)) throw ConfigError(where(k) + ": must be >= 0, got " + text.at(k));
  };
  auto at_most = [&](const std::string& k, double v, double hi) {
    if (v > hi) throw ConfigError(where(k) + ": must be at most " + std::to_string(static_cast<int64_t>(hi)) + ", got " + text.at(k));
  };
  positive("batch_per_worker", static_cast<double>(r.batch_per_worker));
  positive("global_batch", static_cast<double>(r.global_batch));
  positive("lr", r.lr);
  positive("epochs", r.epochs);
  positive("steps", static_cast<double>(r.steps));
  positive("train_samples", static_cast<double>(r.train_samples));
  positive("threads", r.threads);
  positive("workers", r.workers);
  positive("dataset.synthetic_samples", static_cast<double>(r.dataset.synthetic_samples));
  positive("dataset.loader_threads", r.dataset.loader_threads);
  positive("dataset.prefetch", r.dataset.prefetch);
  positive("dist.bucket_mb", r.dist.bucket_mb);
  positive("dist.period", static_cast<double>(r.dist.period));
  positive("dist.shm_chunk_kb", static_cast<double>(r.dist.shm_chunk_kb));
  positive("dist.shm_buffers", static_cast<double>(r.dist.shm_buffers));
  at_most("dist.shm_chunk_kb", static_cast<double>(r.dist.shm_chunk_kb), 65536);  // 64 MiB
  at_most("dist.shm_buffers", static_cast<double>(r.dist.shm_buffers), 1024);
  positive("log_every", static_cast<double>(r.log_every));
  positive("loss_scale.init", r.loss_scale.init);
  non_negative("cuda.workspace_mb", static_cast<double>(r.cuda_workspace_mb));
  at_most("cuda.workspace_mb", static_cast<double>(r.cuda_workspace_mb), 1 << 20);
  positive("loss_scale.growth_interval", static_cast<double>(r.loss_scale.growth_interval));
  positive("lr_schedule.step_epochs", r.lr_schedule.step_epochs);
  positive("lr_schedule.gamma", r.lr_schedule.gamma);
  non_negative("momentum", r.momentum);
  non_negative("weight_decay", r.weight_decay);
  non_negative("lr_schedule.warmup_epochs", r.lr_schedule.warmup_epochs);
  non_negative("lr_schedule.final_lr_fraction", r.lr_schedule.final_lr_fraction);
  at_most("lr_schedule.final_lr_fraction", r.lr_schedule.final_lr_fraction, 1);
  non_negative("lr_schedule.base_batch", static_cast<double>(r.lr_schedule.base_batch));
  non_negative("eval.every_epochs", r.eval.every_epochs);
  non_negative("eval.batch", static_cast<double>(r.eval.batch));
  if (r.momentum >= 1) throw ConfigError(where("momentum") + ": must be in [0, 1), got " + text.at("momentum"));
  if (r.dropout >= 1 || r.dropout < 0)
    throw ConfigError(where("dropout") + ": must be in [0, 1), got " + text.at("dropout"));
  if (r.eval.target_accuracy < 0 || r.eval.target_accuracy > 1)
    throw ConfigError(where("eval.target_accuracy") + ": must be in [0, 1], got " + text.at("eval.target_accuracy"));
}

// checkpoint.*: >= 0 (0 is off), and bounded so that a typo cannot ask for nonsense.
void check_checkpoint(const ResolvedConfig& cfg, const KeyTexts& text) {
  const CheckpointConfig& c = cfg.run.checkpoint;
  auto refuse = [&](const char* key, const std::string& accepted) {
    throw ConfigError(cfg.locate(key) + ": " + accepted + ", got " + text.at(key));
  };
  if (text.count("checkpoint.every_steps") && c.every_steps < 0)
    refuse("checkpoint.every_steps", "must be >= 0 (0 turns step-based checkpoints off)");
  if (text.count("checkpoint.every_minutes") && !(c.every_minutes >= 0 && c.every_minutes <= 525600))
    refuse("checkpoint.every_minutes", "must be in [0, 525600] (0 turns time-based checkpoints off; 525600 is a year)");
}

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
  if (r.global_batch > 0 && r.global_batch % r.workers != 0)
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
  check_ranges(cfg, texts);
  check_checkpoint(cfg, texts);
  check_combinations(cfg, texts);  // after the ranges: workers > 0 divides global_batch
  check_gpu_against_backend(cfg);
}

}  // namespace ts
