// The table of refused combinations (see rules.h): one row per rule, in the order they are
// checked: {keys, scope, covering test, condition, message (or the function computing it)}.
#include "config/rules.h"

#include <algorithm>
#include <numeric>

#include "config/registries.h"
#include "config/resolve_steps.h"
#include "config/schema.h"
#include "core/error.h"
#include "core/strings.h"
#include "data/blob_url.h"

namespace ts {

std::string RuleContext::text(const std::string& key) const {
  auto it = texts.find(key);
  return it != texts.end() ? it->second : "";
}

namespace {

using C = const RuleContext&;
using S = DistStrategy;
using P = PartitionKind;
using A = AllreduceAlgorithm;
constexpr RuleScope kConfig = RuleScope::config;
constexpr RuleScope kRun = RuleScope::run;

S strategy(C c) { return c.run().dist.strategy; }
A allreduce(C c) { return c.run().dist.allreduce; }
const CompressionOptions& compression(C c) { return c.run().dist.compression; }
bool partition_in(C c, std::initializer_list<P> kinds) {
  return std::find(kinds.begin(), kinds.end(), c.run().dist.partition) != kinds.end();
}
std::string partition_only(C c, const std::string& kinds) {
  return "applies to dist.partition " + kinds + " only (this run's is " + partition_kind_name(c.run().dist.partition) +
         "); remove it or set dist.partition";
}
std::string compressor_only(C c, CompressionKind owner) {
  const std::string name = compression_kind_name(owner);
  return "applies to dist.compression " + name + ", and this run compresses with " +
         compression_kind_name(compression(c).kind) + "; remove it or set dist.compression: " + name;
}
// The exclusive groups (config/schema.h); a row names the last key given, conflicting with the first.
const std::vector<std::string>& kBatch = exclusive_key_groups()[0];
const std::vector<std::string>& kLength = exclusive_key_groups()[1];
std::vector<std::string> given_of(C c, const std::vector<std::string>& group) {
  std::vector<std::string> given;
  std::copy_if(group.begin(), group.end(), std::back_inserter(given), [&](const std::string& k) { return c.given(k); });
  return given;
}
std::string conflict(C c, const std::vector<std::string>& group) {
  return "conflicts with '" + given_of(c, group).front() + "'; give exactly one of " + join(group);
}
bool format_fits(C c) {
  const std::vector<std::string> ok = data_names().formats_of(c.run().dataset.name);
  return std::find(ok.begin(), ok.end(), c.run().dataset.format) != ok.end();
}
bool on_gpu(C c) {
  const std::vector<BackendKind> b = c.run().backends();
  return std::any_of(b.begin(), b.end(), backend_has_gpu);
}
std::string backends_text(C c) { return join(c.run().backend_names(), "' and '"); }
int64_t rank_entries(C c) { return static_cast<int64_t>(std::max(c.run().rank_backends.size(), c.run().rank_threads.size())); }
std::vector<int64_t> shares_of(C c) {
  std::vector<int64_t> shares;
  parse_shares(c.text("dist.shares"), shares);
  return shares;
}
int64_t shares_sum(C c) {
  const std::vector<int64_t> shares = shares_of(c);
  return std::accumulate(shares.begin(), shares.end(), int64_t{0});
}
bool shares_parse(C c) {
  std::vector<int64_t> shares;
  return parse_shares(c.text("dist.shares"), shares);
}
std::string advice(C c) { return shares_advice(c.cfg, c.global_batch()); }
// loss_reads log needs a step whose verdict is the rank's own loss, or losses combined on the device.
bool log_reads_cannot_hold(C c) {
  const RunConfig& r = c.run();
  return r.dist.strategy != S::sync || (r.workers != 1 && r.dist.allreduce != A::nccl) || r.dist.hetero_allreduce_device;
}
// The first backend of the run that is not cuda ("" when all are).
std::string non_cuda_backend(C c) {
  for (BackendKind b : c.run().backends())
    if (b != BackendKind::cuda) return backend_kind_name(b);
  return "";
}

const std::vector<ConfigRule> kRules = {
    // The exclusive groups (config/schema.h), keys listed last-first: the row names the later key.
    {{"global_batch", "batch_per_worker"}, kConfig, "cpp/test_run_config.cpp:ImpossibleValues",
     [](C c) { return given_of(c, kBatch).size() > 1; }, "", [](C c) { return conflict(c, kBatch); }},
    {{"train_samples", "steps", "epochs"}, kConfig, "cpp/test_run_config.cpp:OverridesReplaceTheirGroupAndRemoveKeys",
     [](C c) { return given_of(c, kLength).size() > 1; }, "", [](C c) { return conflict(c, kLength); }},
    {{"nesterov", "momentum"}, kConfig, "cpp/test_run_config.cpp:ImpossibleValues",
     [](C c) { return c.run().nesterov && c.run().momentum == 0; },
     "Nesterov momentum needs momentum > 0; set momentum (e.g. 0.9) or nesterov: false"},

    // dist.strategy and the keys of one strategy.
    {{"dist.period", "dist.strategy"}, kConfig, "cpp/test_train_config.cpp:StrategyPeriodBucketAndOverlap",
     [](C c) { return strategy(c) != S::weight_avg && c.given("dist.period") && c.run().dist.period != 1; },
     "{dist.period} applies to dist.strategy weight_avg only ({dist.strategy} exchanges gradients every step); remove "
     "it or set dist.strategy: weight_avg"},
    {{"dist.servers", "dist.staleness", "dist.strategy"}, kConfig, "cpp/test_train_config.cpp:AsyncPsServersAndStaleness",
     [](C c) { return strategy(c) != S::async_ps && (c.given("dist.servers") || c.given("dist.staleness")); },
     "applies to dist.strategy async_ps only (the parameter servers and their staleness bound; this run's strategy is "
     "{dist.strategy}); remove it or set dist.strategy: async_ps"},
    {{"dist.threads_per_worker", "dist.strategy"}, kConfig, "cpp/test_train_config.cpp:HogwildThreadsPerWorker",
     [](C c) { return strategy(c) != S::hogwild && c.given("dist.threads_per_worker"); },
     "applies to dist.strategy hogwild only (this run's strategy is {dist.strategy}); remove it or set dist.strategy: "
     "hogwild"},
    {{"workers", "dist.strategy"}, kConfig, "cpp/test_train_config.cpp:HogwildThreadsPerWorker",
     [](C c) { return strategy(c) == S::hogwild && c.run().workers != 1; },
     "dist.strategy hogwild runs its replicas as threads of one process (dist.threads_per_worker); multi-rank hogwild "
     "is not implemented; set workers: 1"},
    {{"loss_scale.mode", "precision", "dist.strategy"}, kConfig, "cpp/test_train_config.cpp:AsyncPsServersAndStaleness",
     [](C c) {
       return (strategy(c) == S::async_ps || strategy(c) == S::hogwild) &&
              c.run().effective_loss_scale() != LossScaleMode::off;
     },
     "{dist.strategy} applies gradients without unscaling them; use loss_scale.mode: off (and a precision other than "
     "fp16)"},
    {{"dist.partition", "dist.strategy"}, kConfig,
     "python/test_dist_hetero.py:test_shares_that_do_not_fit_are_config_errors",
     [](C c) { return strategy(c) == S::weight_avg && c.run().dist.partition != P::equal; },
     "unequal shares are weighted in the gradient exchange; dist.strategy weight_avg averages weights unweighted; use "
     "dist.strategy sync or dist.partition equal"},
    // async_ps lets each worker run at its own pace: shares are moot, a slowed worker exercises
    // the staleness bound. Hogwild's replicas are threads, not ranks to slow down.
    {{"dist.partition", "dist.strategy"}, kConfig, "cpp/test_train_config.cpp:AsyncPsServersAndStaleness",
     [](C c) { return strategy(c) == S::async_ps && c.run().dist.partition != P::equal; },
     "unequal shares are for dist.strategy sync; async_ps lets each worker run at its own pace already "
     "(dist.emulate_slowdown may slow one down); remove it"},
    {{"dist.partition", "dist.emulate_slowdown.rank", "dist.strategy"}, kConfig,
     "cpp/test_train_config.cpp:HogwildThreadsPerWorker",
     [](C c) { return strategy(c) == S::hogwild && c.run().dist.heterogeneous(); },
     "unequal shares and the emulated slowdown are for ranks; hogwild's replicas are threads of one process; remove "
     "them"},
    {{"global_batch", "workers"}, kConfig, "cpp/test_train_config.cpp:GlobalBatchSplitsOverWorkers",
     [](C c) {
       const RunConfig& r = c.run();
       return r.global_batch > 0 && r.dist.partition == P::equal && r.global_batch % r.workers != 0;
     },
     "{global_batch} does not divide evenly over {workers} workers; use a multiple of workers or batch_per_worker"},
    // Dynamic loss scaling changes the scale from the gradients every rank sees: under a
    // parameter server only rank 0 sees them, so the ranks' scales would drift apart.
    {{"loss_scale.mode", "precision", "dist.allreduce"}, kConfig,
     "cpp/test_config_rules.cpp:DynamicLossScalingNeedsEveryRankToSeeTheSums",
     [](C c) {
       return c.run().effective_loss_scale() == LossScaleMode::dynamic && strategy(c) == S::sync &&
              allreduce(c) == A::ps && c.run().workers > 1;
     },
     "dynamic loss scaling (the fp16 default) needs every rank to see the averaged gradients, and dist.allreduce ps "
     "updates on rank 0 only; use another dist.allreduce or loss_scale.mode: static"},

    // The data set and its format.
    {{"dataset.format", "dataset.name"}, kConfig, "cpp/test_run_config.cpp:ImpossibleValues",
     [](C c) { return !format_fits(c); }, "",
     [](C c) -> std::string {
       const DataNames& data = data_names();
       const std::string& format = c.run().dataset.format, &name = c.run().dataset.name;
       const bool later = std::find(data.reserved.begin(), data.reserved.end(), format) != data.reserved.end();
       return "format '" + format + "' " + (later ? "is not implemented in this build" : "does not fit data set '" + name + "'") +
              "; data set '" + name + "' accepts: " + join(data.formats_of(name)) +
              " (leave dataset.format out for its own format)";
     }},
    {{"dataset.shuffle_buffer", "dataset.format"}, kConfig, "cpp/test_config_rules.cpp:AShuffleBufferIsForRecords",
     [](C c) { return c.run().dataset.shuffle_buffer > 0 && c.run().dataset.format != "records"; },
     "a shuffle buffer is for dataset.format records; '{dataset.format}' is shuffled in full (leave "
     "dataset.shuffle_buffer out)"},

    // ranks.*: one entry per worker, for the workers of sync and weight_avg.
    {{"ranks.backend", "ranks.threads", "workers"}, kConfig,
     "python/test_dist_hetero.py:test_per_rank_settings_that_do_not_fit_are_config_errors",
     [](C c) { return rank_entries(c) > 0 && rank_entries(c) != c.run().workers; }, "",
     [](C c) {
       return std::to_string(rank_entries(c)) + " entries for " + c.text("workers") +
              " workers; give one entry per rank (workers: " + c.text("workers") + ")";
     }},
    {{"ranks.backend", "ranks.threads", "dist.strategy"}, kConfig,
     "cpp/test_config_rules.cpp:PerRankSettingsAreForSyncAndWeightAveraging",
     [](C c) { return rank_entries(c) > 0 && (strategy(c) == S::async_ps || strategy(c) == S::hogwild); },
     "per-rank settings apply to the workers of sync and weight_avg, not to dist.strategy {dist.strategy}; remove "
     "ranks, or use backend and threads"},
    {{"dist.allreduce", "ranks.backend"}, kConfig,
     "python/test_dist_hetero.py:test_per_rank_settings_that_do_not_fit_are_config_errors",
     [](C c) { return c.run().mixed_backends() && allreduce(c) == A::shm; }, "",
     [](C c) {
       return "shm maps host ranks' arenas into one shared window, which ranks on a device backend (" +
              join(c.run().backend_names()) + " in ranks.backend) cannot join; use dist.allreduce mpi, ring, tree or ps";
     }},
    {{"dist.allreduce", "ranks.backend", "dist.hetero_allreduce"}, kConfig,
     "python/test_dist_hetero.py:test_per_rank_settings_that_do_not_fit_are_config_errors",
     [](C c) { return c.run().mixed_backends() && allreduce(c) == A::nccl && !c.run().dist.hetero_allreduce_device; }, "",
     [](C c) {
       return "nccl reduces GPU memory on every rank, and ranks.backend mixes " + join(c.run().backend_names()) +
              "; set dist.hetero_allreduce: device (the CPU ranks' gradients are summed on their node's GPU), or use "
              "an MPI algorithm (mpi, ring, tree, ps: device gradients are staged through host memory)";
     }},

    // `gpu` against the backend: a CPU backend computes on no GPU, a GPU backend on some GPU
    // (which one, the device check says when the run starts: train/capabilities.cpp). With
    // ranks.backend, `gpu` is what the ranks on a GPU backend expect.
    {{"gpu", "backend", "ranks.backend"}, kConfig, "cpp/test_run_config.cpp:GpuIsAGenerationCheckedAgainstTheBackend",
     [](C c) { return !on_gpu(c) && c.run().gpu != GpuGeneration::none; }, "",
     [](C c) {
       const bool any = c.run().gpu == GpuGeneration::any;
       const std::string gpu = c.text("gpu");
       return "'" + gpu + "' expects " + (any ? std::string("a GPU") : "GPU generation '" + gpu + "'") + " but backend '" +
              backends_text(c) + "' (" + c.cfg.locate(c.run().rank_backends.empty() ? "backend" : "ranks.backend") +
              ") computes on the CPU (GPU generation none); set backend: cuda to run on " +
              (any ? std::string("a GPU") : "a " + gpu) + ", or gpu: none";
     }},
    {{"gpu", "backend", "ranks.backend"}, kConfig, "cpp/test_run_config.cpp:GpuIsAGenerationCheckedAgainstTheBackend",
     [](C c) { return on_gpu(c) && c.run().gpu == GpuGeneration::none; }, "",
     [](C c) {
       std::vector<std::string> gpus = accepted_gpu_generations();
       gpus.erase(std::remove(gpus.begin(), gpus.end(), "none"), gpus.end());
       return "'none' but backend '" + backends_text(c) + "' computes on a GPU; say which generation the run expects, or "
              "gpu: any (accepted: " + join(gpus, " | ") + "; leaving gpu out means any)";
     }},

    // Heterogeneous workers (docs/heterogeneous.md): the partitions' own keys, the emulated
    // slowdown, static shares against the workers and the global batch.
    {{"dist.shares", "dist.partition"}, kConfig,
     "python/test_dist_hetero.py:test_shares_that_do_not_fit_are_config_errors",
     [](C c) { return c.given("dist.shares") && !partition_in(c, {P::static_}); }, "",
     [](C c) { return partition_only(c, "static"); }},
    {{"dist.calibration_steps", "dist.share_quantum", "dist.partition"}, kConfig,
     "cpp/test_config_rules.cpp:PartitionSettingsApplyToTheirPartitions",
     [](C c) {
       return (c.given("dist.calibration_steps") || c.given("dist.share_quantum")) &&
              !partition_in(c, {P::measured, P::adaptive});
     },
     "", [](C c) { return partition_only(c, "measured or adaptive"); }},
    {{"dist.rebalance_steps", "dist.partition"}, kConfig, "cpp/test_train_config.cpp:PartitionSharesAndEmulatedSlowdown",
     [](C c) { return c.given("dist.rebalance_steps") && !partition_in(c, {P::adaptive}); }, "",
     [](C c) { return partition_only(c, "adaptive"); }},
    {{"dist.emulate_slowdown.factor", "dist.emulate_slowdown.rank"}, kConfig,
     "python/test_dist_hetero.py:test_shares_that_do_not_fit_are_config_errors",
     [](C c) { return c.given("dist.emulate_slowdown.factor") && !c.given("dist.emulate_slowdown.rank"); },
     "says how much slower, but not which rank; add dist.emulate_slowdown.rank"},
    {{"dist.emulate_slowdown.rank", "workers"}, kConfig,
     "python/test_dist_hetero.py:test_shares_that_do_not_fit_are_config_errors",
     [](C c) { return c.run().dist.emulate_slowdown_rank >= c.run().workers; }, "",
     [](C c) {
       return "rank " + c.text("dist.emulate_slowdown.rank") + " does not exist among " + c.text("workers") +
              " workers; use 0.." + std::to_string(c.run().workers - 1);
     }},
    {{"dist.partition", "dist.shares"}, kConfig,
     "python/test_dist_hetero.py:test_shares_that_do_not_fit_are_config_errors",
     [](C c) { return partition_in(c, {P::static_}) && !c.given("dist.shares"); }, "",
     [](C c) {
       return "static needs dist.shares, each rank's samples per step summing to the global batch (" +
              std::to_string(c.global_batch()) + ")" + advice(c);
     }},
    {{"dist.shares"}, kConfig, "cpp/test_run_config.cpp:ListValuesInBothSpellings",
     [](C c) { return partition_in(c, {P::static_}) && !shares_parse(c); }, "",
     [](C c) {
       return "'" + c.text("dist.shares") + "' is not a list of integers in 1.." + std::to_string(kMostShare) + advice(c);
     }},
    {{"dist.shares", "workers"}, kConfig, "cpp/test_run_config.cpp:ListValuesInBothSpellings",
     [](C c) { return partition_in(c, {P::static_}) && static_cast<int64_t>(shares_of(c).size()) != c.run().workers; }, "",
     [](C c) {
       return std::to_string(shares_of(c).size()) + " shares for " + c.text("workers") +
              " workers; give one share per rank (workers: " + c.text("workers") + ")" + advice(c);
     }},
    {{"dist.shares", "global_batch"}, kConfig,
     "python/test_cli_config_input.py:test_wrong_shares_name_the_yaml_form_and_both_set_forms",
     [](C c) { return partition_in(c, {P::static_}) && shares_sum(c) != c.global_batch(); }, "",
     [](C c) {
       return "the shares " + shares_text(shares_of(c)) + " sum to " + std::to_string(shares_sum(c)) +
              ", not to the global batch " + std::to_string(c.global_batch()) +
              "; make them sum to it (or change global_batch)" + advice(c);
     }},
    {{"dist.share_quantum", "dist.partition"}, kConfig,
     "python/test_dist_hetero.py:test_shares_that_do_not_fit_are_config_errors",
     [](C c) {
       const int64_t quantum = c.run().dist.share_quantum, batch = c.global_batch();
       return partition_in(c, {P::measured, P::adaptive}) && (batch % quantum != 0 || batch < quantum * c.run().workers);
     },
     "", [](C c) {
       return "shares in multiples of " + std::to_string(c.run().dist.share_quantum) + " need a global batch (" +
              std::to_string(c.global_batch()) + ") that is a multiple of it and holds one per worker (" +
              c.text("workers") + "); choose another dist.share_quantum or global_batch";
     }},

    // Gradient compression: of sync, with the algorithms that run it (dist/exchange_strategy.cpp
    // refuses the others), each compressor's keys with that compressor.
    {{"dist.qsgd_bits", "dist.qsgd_bucket"}, kConfig, "cpp/test_compression.cpp:KeysParseAndImpossibleCombinationsAreRefused",
     [](C c) { return compression(c).kind != CompressionKind::qsgd && (c.given("dist.qsgd_bits") || c.given("dist.qsgd_bucket")); },
     "", [](C c) { return compressor_only(c, CompressionKind::qsgd); }},
    {{"dist.topk_ratio"}, kConfig, "cpp/test_config_rules.cpp:CompressorSettingsApplyToTheirCompressor",
     [](C c) { return compression(c).kind != CompressionKind::topk && c.given("dist.topk_ratio"); }, "",
     [](C c) { return compressor_only(c, CompressionKind::topk); }},
    {{"dist.powersgd_rank", "dist.powersgd_warm_start"}, kConfig,
     "cpp/test_config_rules.cpp:CompressorSettingsApplyToTheirCompressor",
     [](C c) {
       return compression(c).kind != CompressionKind::powersgd &&
              (c.given("dist.powersgd_rank") || c.given("dist.powersgd_warm_start"));
     },
     "", [](C c) { return compressor_only(c, CompressionKind::powersgd); }},
    {{"dist.error_feedback", "dist.compression_warmup_steps"}, kConfig,
     "cpp/test_compression.cpp:KeysParseAndImpossibleCombinationsAreRefused",
     [](C c) { return !compression(c).enabled() && (c.given("dist.error_feedback") || c.given("dist.compression_warmup_steps")); },
     "applies to compressed exchanges, and dist.compression is none; remove it or set dist.compression (fp16, bf16, "
     "qsgd, topk, powersgd)"},
    {{"dist.compression", "dist.strategy"}, kConfig, "cpp/test_compression.cpp:KeysParseAndImpossibleCombinationsAreRefused",
     [](C c) { return compression(c).enabled() && strategy(c) != S::sync; },
     "{dist.compression} compresses the gradients of dist.strategy sync, not {dist.strategy}; set dist.compression: "
     "none or dist.strategy: sync"},
    {{"dist.compression", "dist.allreduce"}, kConfig, "cpp/test_compression.cpp:KeysParseAndImpossibleCombinationsAreRefused",
     [](C c) { return compression(c).enabled() && (allreduce(c) == A::ps || allreduce(c) == A::nccl); },
     "{dist.compression} is not implemented with dist.allreduce {dist.allreduce} ({dist.allreduce@}); use "
     "dist.allreduce mpi, ring, tree or shm, or dist.compression: none"},

    // loss_reads log holds the losses back, so nothing in the step may need this step's loss on
    // the host: one rank of sync (its verdict is its own loss), or sync with dist.allreduce nccl
    // (the losses combined on the device), without cuda.sync_phases (which reads it at once).
    {{"loss_reads"}, kConfig,
     "python/test_cli_loss_reads.py:test_log_reads_need_a_step_that_does_not_combine_the_losses_on_the_host",
     [](C c) { return c.run().loss_reads == LossReads::log && log_reads_cannot_hold(c); }, "",
     [](C c) {
       return "'log' reads the loss every log_every steps only, which needs a step whose verdict is the rank's own "
              "loss (one worker of dist.strategy sync) or whose losses are combined on the device (dist.strategy sync "
              "with dist.allreduce nccl); this run has " + c.text("workers") + " worker(s) of dist.strategy " +
              c.text("dist.strategy") + " with dist.allreduce " + c.text("dist.allreduce") +
              (c.run().dist.hetero_allreduce_device ? " and dist.hetero_allreduce device" : "") +
              ", whose exchange combines the losses on the host every step; remove loss_reads or set it to step";
     }},
    {{"loss_reads", "cuda.sync_phases"}, kConfig,
     "python/test_cli_loss_reads.py:test_log_reads_need_a_step_that_does_not_combine_the_losses_on_the_host",
     [](C c) { return c.run().loss_reads == LossReads::log && c.run().cuda_sync_phases; },
     "'log' reads the loss every log_every steps only, and cuda.sync_phases: true reads it right after each forward; "
     "drop one of them"},
    // cuda.reduced_precision_reduction chooses among the graph API's engines; the legacy calls have none.
    {{"cuda.reduced_precision_reduction", "cuda.conv_api"}, kConfig,
     "python/test_cuda_keys.py:test_reduced_precision_reduction_needs_the_graph_api_and_stays_out_of_the_config_id_when_unset",
     [](C c) { return c.run().cuda_reduced_precision_reduction && c.run().cuda_conv_api != ConvApi::graph; },
     "true selects among cuDNN's graph API engines, and this run plans its convolutions with the legacy calls "
     "(cuda.conv_api unset or legacy); set cuda.conv_api: graph or remove the key"},

    // When a run starts: what the training loop cannot execute (predict and trainscale-sim price it).
    {{"dist.strategy", "backend"}, kRun, "cpp/test_config_rules.cpp:RunRulesHoldWhenARunStarts",
     [](C c) { return strategy(c) == S::hogwild && c.run().backend == BackendKind::cuda; },
     "hogwild shares one host weight arena between threads; use backend cpu or ref"},
    {{"dist.strategy", "backend"}, kRun, "cpp/test_config_rules.cpp:RunRulesHoldWhenARunStarts",
     [](C c) { return strategy(c) == S::async_ps && c.run().backend == BackendKind::cuda; },
     "async_ps keeps the weights in the servers' host memory and pushes host gradients; use backend cpu or ref"},
    {{"dataset.root", "dataset.storage"}, kRun, "python/test_blob_storage.py:test_storage_and_root_must_agree",
     [](C c) {
       const DatasetConfig& d = c.run().dataset;
       return d.storage == "blob" && !is_blob_url(d.root) && d.format != "synthetic";
     },
     "dataset.root '{dataset.root}' is not a URL, and storage blob reads URLs (http(s)://HOST[:PORT]/PREFIX or "
     "s3://BUCKET/PREFIX)"},
    {{"dataset.storage", "dataset.root"}, kRun, "python/test_blob_storage.py:test_storage_and_root_must_agree",
     [](C c) {
       const DatasetConfig& d = c.run().dataset;
       return d.storage != "blob" && is_blob_url(d.root) && d.format != "synthetic";
     },
     "dataset.root '{dataset.root}' is a URL; set dataset.storage: blob to read it over the network"},
    // dist.hetero_allreduce device: a CPU rank's gradients reach NCCL through its node's GPU rank.
    {{"dist.allreduce", "backend"}, kRun, "cpp/test_config_rules.cpp:RunRulesHoldWhenARunStarts",
     [](C c) { return allreduce(c) == A::nccl && !c.run().dist.hetero_allreduce_device && !non_cuda_backend(c).empty(); },
     "", [](C c) {
       return "nccl needs the cuda backend (it reduces GPU memory), and this run's backend is " + non_cuda_backend(c) +
              "; set backend: cuda, or use mpi, ring, tree, ps or shm";
     }},
    {{"dist.allreduce", "dist.strategy"}, kRun, "cpp/test_config_rules.cpp:RunRulesHoldWhenARunStarts",
     [](C c) { return allreduce(c) == A::nccl && strategy(c) != S::sync; },
     "nccl runs dist.strategy sync, not {dist.strategy}; {dist.strategy} on GPUs averages through an MPI algorithm "
     "(mpi, ring, tree, ps, shm: staged through host memory)"},
    {{"dist.hetero_allreduce", "dist.allreduce"}, kRun,
     "python/test_dist_hetero.py:test_hetero_allreduce_device_is_refused_without_a_gpu_path",
     [](C c) { return c.run().dist.hetero_allreduce_device && allreduce(c) != A::nccl; },
     "device sums the gradients on the GPUs with NCCL, and dist.allreduce is {dist.allreduce} ({dist.allreduce@}); set "
     "dist.allreduce: nccl, or dist.hetero_allreduce: host (gradients summed in host memory with the MPI algorithms)"},
};

// The message with "{key}" replaced by the key's value and "{key@}" by where it was set; braces
// around anything but a key of the schema stay as they are.
std::string filled(const std::string& message, C c) {
  std::string out;
  size_t at = 0;
  for (size_t open; (open = message.find('{', at)) != std::string::npos;) {
    const size_t close = message.find('}', open);
    std::string key = message.substr(open + 1, close == std::string::npos ? 0 : close - open - 1);
    const bool where = !key.empty() && key.back() == '@';
    if (where) key.pop_back();
    out += message.substr(at, open - at);
    if (close == std::string::npos || find_key_spec(key) == nullptr) {
      out += '{';
      at = open + 1;
      continue;
    }
    out += where ? c.cfg.locate(key) : c.text(key);
    at = close + 1;
  }
  return out + message.substr(at);
}

}  // namespace

const std::vector<ConfigRule>& config_rules() { return kRules; }

void check_config_rules(const ResolvedConfig& cfg, const std::map<std::string, std::string>& texts, RuleScope scope) {
  const RuleContext c{cfg, texts};
  for (const ConfigRule& rule : kRules) {
    if (rule.scope != scope || !rule.refuses(c)) continue;
    const auto given = std::find_if(rule.keys.begin(), rule.keys.end(), [&](const std::string& k) { return c.given(k); });
    throw ConfigError(cfg.locate(given != rule.keys.end() ? *given : rule.keys.front()) + ": " +
                      (rule.computed ? rule.computed(c) : filled(rule.message, c)));
  }
}

}  // namespace ts
