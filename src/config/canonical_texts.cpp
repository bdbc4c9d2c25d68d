// Type checks and canonical spelling of the given values, defaults, derived defaults, and the
// typed struct (see resolve_steps.h).
#include <algorithm>
#include <charconv>
#include <cmath>

#include "config/enums.h"
#include "config/registries.h"
#include "config/resolve_steps.h"
#include "config/schema.h"
#include "config/strict_yaml.h"
#include "core/error.h"
#include "core/names.h"
#include "core/strings.h"

namespace ts {
namespace {

bool parse_bool(const std::string& t, bool& out) {
  if (t == "true" || t == "True" || t == "yes" || t == "on") return out = true, true;
  if (t == "false" || t == "False" || t == "no" || t == "off") return out = false, true;
  return false;
}

bool parse_int(const std::string& t, int64_t& out) {
  auto res = std::from_chars(t.data(), t.data() + t.size(), out);
  return res.ec == std::errc() && res.ptr == t.data() + t.size();
}

bool parse_double(const std::string& t, double& out) {
  if (t.empty()) return false;
  auto res = std::from_chars(t.data(), t.data() + t.size(), out);
  return res.ec == std::errc() && res.ptr == t.data() + t.size() && std::isfinite(out);
}


// "must be at most 1024, got 5000 (accepted: 1..1024, docs/config.md)" when `value` lies outside
// the key's range, else "".
std::string out_of_range(const KeySpec& spec, const std::string& text, double value) {
  const std::string problem = range_problem(spec.range, value);
  if (problem.empty()) return "";
  return problem + ", got " + text + " (accepted: " + range_text(spec.type, spec.range) + ", docs/config.md)";
}

// The canonical text of one given value, or a ConfigError naming where it came from.
std::string canonical_text(const KeySpec& spec, const RawValue& raw) {
  auto bad = [&](const std::string& what) -> std::string {
    throw ConfigError(raw.where + ": key '" + spec.key + "': " + what);
  };
  if (const std::string control = control_character_problem(raw.text); !control.empty())
    bad("the value contains " + control + "; values are one line of text");
  switch (spec.type) {
    case ValueType::integer: {
      int64_t v;
      if (!parse_int(raw.text, v)) {
        double d;  // a whole number too large for 64 bits still gets its range in the message
        if (parse_double(raw.text, d) && d == std::floor(d) && !range_problem(spec.range, d).empty())
          bad(out_of_range(spec, raw.text, d));
        bad("'" + raw.text + "' is not an integer; expected " + value_type_name(spec.type));
      }
      if (const std::string e = out_of_range(spec, raw.text, static_cast<double>(v)); !e.empty()) bad(e);
      return std::to_string(v);
    }
    case ValueType::number: {
      double v;
      if (!parse_double(raw.text, v)) bad("'" + raw.text + "' is not a finite number");
      if (const std::string e = out_of_range(spec, raw.text, v); !e.empty()) bad(e);
      return shortest_number_text(v);
    }
    case ValueType::boolean: {
      bool v;
      return parse_bool(raw.text, v) ? (v ? "true" : "false") : bad("'" + raw.text + "' is not true or false");
    }
    case ValueType::string: break;
  }
  if (spec.accepted) {
    const std::vector<std::string> ok = spec.accepted();
    if (std::find(ok.begin(), ok.end(), raw.text) == ok.end()) bad(not_accepted(raw.text, ok));
  }
  if (raw.text.empty()) bad("must not be empty");
  return raw.text;
}

}  // namespace

KeyTexts canonical_texts(const RawValues& values, std::map<std::string, std::string>& where) {
  KeyTexts texts;
  for (const auto& spec : run_config_schema()) {
    auto it = values.find(spec.key);
    if (it == values.end()) {
      if (!spec.def.empty()) texts[spec.key] = spec.def;
      continue;
    }
    where[spec.key] = it->second.where;
    texts[spec.key] = canonical_text(spec, it->second);
  }
  return texts;
}

void derive_defaults(KeyTexts& texts) {
  // The documented defaults of the exclusive groups (emplace: GCC 12 warns falsely on
  // assigning a literal here, -Wrestrict).
  if (!texts.count("batch_per_worker") && !texts.count("global_batch")) texts.emplace("batch_per_worker", "64");
  if (!texts.count("epochs") && !texts.count("steps") && !texts.count("train_samples")) texts.emplace("epochs", "1");
  if (!texts.count("dataset.format"))
    texts.emplace("dataset.format", data_names().default_format(texts.at("dataset.name")));
  // A CUDA run computes on some GPU; a CPU backend on none. With ranks.backend, a run with
  // any CUDA rank expects some GPU (its CPU ranks expect none: RunConfig::for_rank).
  const bool cuda = texts.at("backend") == "cuda" ||
                    (texts.count("ranks.backend") && texts.at("ranks.backend").find("cuda") != std::string::npos);
  if (!texts.count("gpu")) texts.emplace("gpu", cuda ? "any" : "none");
}

RunConfig typed_config(const KeyTexts& t) {
  auto has = [&](const char* k) { return t.count(k) > 0; };
  auto i64 = [&](const char* k) { int64_t v = 0; parse_int(t.at(k), v); return v; };
  auto f64 = [&](const char* k) { double v = 0; parse_double(t.at(k), v); return v; };
  auto flag = [&](const char* k) { return t.at(k) == "true"; };
  auto str = [&](const char* k) { return t.at(k); };
  auto pick = [&](const auto& values, auto name, const char* k) { return enum_from_name(values, name, t.at(k), k); };
  RunConfig r;
  r.model = str("model");
  // Field by field, not by position: DatasetConfig grows with every format and storage.
  DatasetConfig& d = r.dataset;
  d.name = str("dataset.name");
  d.format = str("dataset.format");
  d.root = str("dataset.root");
  d.storage = str("dataset.storage");
  d.synthetic_samples = i64("dataset.synthetic_samples");
  d.loader_threads = static_cast<int>(i64("dataset.loader_threads"));
  d.prefetch = static_cast<int>(i64("dataset.prefetch"));
  d.shuffle = flag("dataset.shuffle");
  d.shuffle_buffer = i64("dataset.shuffle_buffer");
  d.test_fraction = f64("dataset.test_fraction");
  d.stage = str("dataset.stage");
  d.stage_dir = has("dataset.stage_dir") ? str("dataset.stage_dir") : "";
  d.cache = str("dataset.cache");
  if (has("dataset.endpoint")) d.endpoint = str("dataset.endpoint");
  if (has("dataset.blob_deadline_s")) d.blob_deadline_s = f64("dataset.blob_deadline_s");
  if (has("dataset.blob_min_kib_s")) d.blob_min_kib_s = f64("dataset.blob_min_kib_s");
  if (has("batch_per_worker")) r.batch_per_worker = i64("batch_per_worker");
  if (has("global_batch")) r.global_batch = i64("global_batch");
  r.lr = f64("lr");
  r.lr_schedule = {pick(all_lr_schedule_kinds(), lr_schedule_kind_name, "lr_schedule.kind"),
                   f64("lr_schedule.warmup_epochs"), f64("lr_schedule.step_epochs"), f64("lr_schedule.gamma"),
                   f64("lr_schedule.final_lr_fraction"), pick(all_lr_scales(), lr_scale_name, "lr_schedule.scale"),
                   i64("lr_schedule.base_batch")};
  r.momentum = f64("momentum");
  r.nesterov = flag("nesterov");
  r.weight_decay = f64("weight_decay");
  r.dropout = f64("dropout");
  if (has("epochs")) r.epochs = f64("epochs");
  if (has("steps")) r.steps = i64("steps");
  if (has("train_samples")) r.train_samples = i64("train_samples");
  r.precision = pick(all_precisions(), precision_name, "precision");
  r.loss_scale = {pick(all_loss_scale_modes(), loss_scale_mode_name, "loss_scale.mode"),
                  f64("loss_scale.init"), i64("loss_scale.growth_interval")};
  r.cuda_graphs = flag("cuda.graphs");
  if (has("flush_denormals")) r.flush_denormals = flag("flush_denormals");
  r.cuda_workspace_mb = i64("cuda.workspace_mb");
  if (has("cuda.sync_phases")) r.cuda_sync_phases = flag("cuda.sync_phases");
  if (has("cuda.reduced_precision_reduction"))
    r.cuda_reduced_precision_reduction = flag("cuda.reduced_precision_reduction");
  if (has("cuda.conv_api")) r.cuda_conv_api = pick(all_conv_apis(), conv_api_name, "cuda.conv_api");
  if (has("cuda.algorithms"))
    r.cuda_algorithms = pick(all_algorithm_choices(), algorithm_choice_name, "cuda.algorithms");
  r.backend = pick(all_backend_kinds(), backend_kind_name, "backend");
  r.threads = static_cast<int>(i64("threads"));
  r.workers = static_cast<int>(i64("workers"));
  r.dist = DistConfig{};
  r.dist.strategy = pick(all_dist_strategies(), dist_strategy_name, "dist.strategy");
  r.dist.allreduce = pick(known_allreduce_algorithms(), allreduce_algorithm_name, "dist.allreduce");
  r.dist.bucket_mb = f64("dist.bucket_mb");
  r.dist.overlap = flag("dist.overlap");
  r.dist.period = i64("dist.period");
  r.dist.shm_chunk_kb = i64("dist.shm_chunk_kb");
  r.dist.shm_buffers = i64("dist.shm_buffers");
  r.dist.timeout_s = f64("dist.timeout_s");
  read_partition_config(t, r.dist);
  read_rank_config(t, r);  // after r.dist: it sets dist.ranks_differ
  CompressionOptions& c = r.dist.compression;
  if (has("dist.compression")) c.kind = pick(all_compression_kinds(), compression_kind_name, "dist.compression");
  if (has("dist.qsgd_bits")) c.qsgd_bits = static_cast<int>(i64("dist.qsgd_bits"));
  if (has("dist.qsgd_bucket")) c.qsgd_bucket = i64("dist.qsgd_bucket");
  if (has("dist.topk_ratio")) c.topk_ratio = f64("dist.topk_ratio");
  if (has("dist.powersgd_rank")) c.powersgd_rank = static_cast<int>(i64("dist.powersgd_rank"));
  if (has("dist.powersgd_warm_start")) c.powersgd_warm_start = flag("dist.powersgd_warm_start");
  if (has("dist.error_feedback"))
    c.error_feedback = pick(all_error_feedback_modes(), error_feedback_mode_name, "dist.error_feedback");
  if (has("dist.compression_warmup_steps")) c.warmup_steps = i64("dist.compression_warmup_steps");
  if (has("dist.servers")) r.dist.servers = static_cast<int>(i64("dist.servers"));
  if (has("dist.staleness")) r.dist.staleness = i64("dist.staleness");
  if (has("dist.threads_per_worker")) r.dist.threads_per_worker = i64("dist.threads_per_worker");
  r.gpu = pick(all_gpu_generations(), gpu_generation_name, "gpu");
  r.mpi_flavor = pick(all_mpi_flavors(), mpi_flavor_name, "mpi_flavor");
  r.eval = {f64("eval.every_epochs"), f64("eval.target_accuracy"), i64("eval.batch")};
  if (has("checkpoint.every_steps")) r.checkpoint.every_steps = i64("checkpoint.every_steps");
  if (has("checkpoint.every_minutes")) r.checkpoint.every_minutes = f64("checkpoint.every_minutes");
  if (has("checkpoint.keep")) r.checkpoint.keep = flag("checkpoint.keep");
  r.seed = static_cast<uint64_t>(i64("seed"));
  r.log_every = i64("log_every");
  if (has("diverge.loss_above_factor")) r.diverge_loss_above_factor = f64("diverge.loss_above_factor");
  if (has("loss_reads")) r.loss_reads = pick(all_loss_reads(), loss_reads_name, "loss_reads");
  if (has("logging.mllog")) r.mllog_path = str("logging.mllog");
  if (has("metrics.au_threshold")) r.au_threshold = f64("metrics.au_threshold");
  return r;
}

void resolve_eval_batch(RunConfig& run, KeyTexts& texts) {
  if (run.eval.batch == 0) run.eval.batch = run.batch_for(run.workers);
  texts["eval.batch"] = std::to_string(run.eval.batch);
}

}  // namespace ts
