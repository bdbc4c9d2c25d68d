// The table of refused combinations (see rules.h): one row per rule, in the order they are
// checked. A row: {keys, scope, condition, message, test}.
#include "config/rules.h"

#include <algorithm>
#include <numeric>

#include "config/registries.h"
#include "config/resolve_steps.h"
#include "core/error.h"
#include "core/strings.h"
#include "data/blob_url.h"

namespace ts {

std::string RuleContext::text(const std::string& key) const {
  auto it = texts.find(key);
  return it != texts.end() ? it->second : "";
}

int64_t RuleContext::global_batch() const {
  return cfg.run.global_batch > 0 ? cfg.run.global_batch : cfg.run.batch_per_worker * cfg.run.workers;
}

namespace {

using C = const RuleContext&;
using S = DistStrategy;
using P = PartitionKind;
constexpr RuleScope kConfig = RuleScope::config;
constexpr RuleScope kRun = RuleScope::run;

// The keys of `group` the config gives.
std::vector<std::string> given_of(C c, const std::vector<std::string>& group) {
  std::vector<std::string> given;
  for (const auto& k : group)
    if (c.given(k)) given.push_back(k);
  return given;
}
const std::vector<std::string> kBatch = {"batch_per_worker", "global_batch"};
const std::vector<std::string> kLength = {"epochs", "steps", "train_samples"};
// Two keys of an exclusive group: the row names the last one given, conflicting with the first.
std::string conflict(C c, const std::vector<std::string>& group) {
  return "conflicts with '" + given_of(c, group).front() + "'; give exactly one of " + join(group);
}

bool dynamic_or_static_scale(C c) { return c.run().effective_loss_scale() != LossScaleMode::off; }
S strategy(C c) { return c.run().dist.strategy; }
AllreduceAlgorithm allreduce(C c) { return c.run().dist.allreduce; }
bool has_cuda(C c) {
  for (BackendKind b : c.run().backends())
    if (b == BackendKind::cuda) return true;
  return false;
}
bool partition_in(C c, std::initializer_list<P> kinds) {
  return std::find(kinds.begin(), kinds.end(), c.run().dist.partition) != kinds.end();
}
std::string partition_only(C c, const std::string& kinds) {
  return "applies to dist.partition " + kinds + " only (this run's is " + partition_kind_name(c.run().dist.partition) +
         "); remove it or set dist.partition";
}
const CompressionOptions& compression(C c) { return c.run().dist.compression; }
std::string compressor_only(C c, CompressionKind owner) {
  return std::string("applies to dist.compression ") + compression_kind_name(owner) + ", and this run compresses with " +
         compression_kind_name(compression(c).kind) + "; remove it or set dist.compression: " + compression_kind_name(owner);
}
// The data set's formats, and whether `format` is one the project reserves for later.
std::vector<std::string> formats_of(C c) { return data_names().formats_of(c.run().dataset.name); }
bool format_fits(C c) {
  const std::vector<std::string> ok = formats_of(c);
  return std::find(ok.begin(), ok.end(), c.run().dataset.format) != ok.end();
}
bool on_gpu(C c) {
  const std::vector<BackendKind> b = c.run().backends();
  return std::any_of(b.begin(), b.end(), backend_has_gpu);
}
std::string backends_text(C c) { return join(c.run().backend_names(), "' and '"); }
int64_t rank_entries(C c) {
  return static_cast<int64_t>(std::max(c.run().rank_backends.size(), c.run().rank_threads.size()));
}
std::vector<int64_t> shares_of(C c) {
  std::vector<int64_t> shares;
  parse_shares(c.text("dist.shares"), shares);
  return shares;
}
bool static_shares_parse(C c) {
  std::vector<int64_t> shares;
  return parse_shares(c.text("dist.shares"), shares);
}
// loss_reads log needs a step whose verdict is the rank's own loss, or losses combined on the device.
bool log_reads_cannot_hold(C c) {
  const RunConfig& r = c.run();
  return r.dist.strategy != S::sync || (r.workers != 1 && r.dist.allreduce != AllreduceAlgorithm::nccl) ||
         r.dist.hetero_allreduce_device;
}
// The first backend of the run that is not cuda ("" when all are).
std::string non_cuda_backend(C c) {
  for (BackendKind b : c.run().backends())
    if (b != BackendKind::cuda) return backend_kind_name(b);
  return "";
}

const std::vector<ConfigRule> kRules = {
    // Exclusive groups (config/schema.h exclusive_key_groups): keys listed last-first, so the
    // row names the later key of the two.
    {{"global_batch", "batch_per_worker"}, kConfig, [](C c) { return given_of(c, kBatch).size() > 1; },
     [](C c) { return conflict(c, kBatch); }, "cpp/test_run_config.cpp:ImpossibleValues"},
    {{"train_samples", "steps", "epochs"}, kConfig, [](C c) { return given_of(c, kLength).size() > 1; },
     [](C c) { return conflict(c, kLength); }, "cpp/test_run_config.cpp:OverridesReplaceTheirGroupAndRemoveKeys"},
    {{"nesterov", "momentum"}, kConfig, [](C c) { return c.run().nesterov && c.run().momentum == 0; },
     [](C) { return std::string("Nesterov momentum needs momentum > 0; set momentum (e.g. 0.9) or nesterov: false"); },
     "cpp/test_run_config.cpp:ImpossibleValues"},

    // dist.strategy and the keys of one strategy.
    {{"dist.period", "dist.strategy"}, kConfig,
     [](C c) { return strategy(c) != S::weight_avg && c.given("dist.period") && c.run().dist.period != 1; },
     [](C c) {
       return c.text("dist.period") + " applies to dist.strategy weight_avg only (" + c.text("dist.strategy") +
              " exchanges gradients every step); remove it or set dist.strategy: weight_avg";
     },
     "cpp/test_train_config.cpp:StrategyPeriodBucketAndOverlap"},
    {{"dist.servers", "dist.staleness", "dist.strategy"}, kConfig,
     [](C c) { return strategy(c) != S::async_ps && (c.given("dist.servers") || c.given("dist.staleness")); },
     [](C c) {
       return "applies to dist.strategy async_ps only (the parameter servers and their staleness bound; this run's "
              "strategy is " + c.text("dist.strategy") + "); remove it or set dist.strategy: async_ps";
     },
     "cpp/test_train_config.cpp:AsyncPsServersAndStaleness"},
    {{"dist.threads_per_worker", "dist.strategy"}, kConfig,
     [](C c) { return strategy(c) != S::hogwild && c.given("dist.threads_per_worker"); },
     [](C c) {
       return "applies to dist.strategy hogwild only (this run's strategy is " + c.text("dist.strategy") +
              "); remove it or set dist.strategy: hogwild";
     },
     "cpp/test_train_config.cpp:HogwildThreadsPerWorker"},
    {{"workers", "dist.strategy"}, kConfig, [](C c) { return strategy(c) == S::hogwild && c.run().workers != 1; },
     [](C) {
       return std::string("dist.strategy hogwild runs its replicas as threads of one process (dist.threads_per_worker); "
                          "multi-rank hogwild is not implemented; set workers: 1");
     },
     "cpp/test_train_config.cpp:HogwildThreadsPerWorker"},
    {{"loss_scale.mode", "precision", "dist.strategy"}, kConfig,
     [](C c) { return (strategy(c) == S::async_ps || strategy(c) == S::hogwild) && dynamic_or_static_scale(c); },
     [](C c) {
       return c.text("dist.strategy") + " applies gradients without unscaling them; use loss_scale.mode: off (and a "
                                        "precision other than fp16)";
     },
     "cpp/test_train_config.cpp:AsyncPsServersAndStaleness"},
    {{"dist.partition", "dist.strategy"}, kConfig,
     [](C c) { return strategy(c) == S::weight_avg && c.run().dist.partition != P::equal; },
     [](C) {
       return std::string("unequal shares are weighted in the gradient exchange; dist.strategy weight_avg averages "
                          "weights unweighted; use dist.strategy sync or dist.partition equal");
     },
     "python/test_dist_hetero.py:test_shares_that_do_not_fit_are_config_errors"},
    // async_ps lets each worker run at its own pace: shares are moot, but a slowed worker is how
    // the staleness bound is exercised.
    {{"dist.partition", "dist.strategy"}, kConfig,
     [](C c) { return strategy(c) == S::async_ps && c.run().dist.partition != P::equal; },
     [](C) {
       return std::string("unequal shares are for dist.strategy sync; async_ps lets each worker run at its own pace "
                          "already (dist.emulate_slowdown may slow one down); remove it");
     },
     "cpp/test_train_config.cpp:AsyncPsServersAndStaleness"},
    // Hogwild's replicas are threads, not ranks to slow down.
    {{"dist.partition", "dist.emulate_slowdown.rank", "dist.strategy"}, kConfig,
     [](C c) { return strategy(c) == S::hogwild && c.run().dist.heterogeneous(); },
     [](C) {
       return std::string("unequal shares and the emulated slowdown are for ranks; hogwild's replicas are threads of "
                          "one process; remove them");
     },
     "cpp/test_train_config.cpp:HogwildThreadsPerWorker"},
    {{"global_batch", "workers"}, kConfig,
     [](C c) {
       const RunConfig& r = c.run();
       return r.global_batch > 0 && r.dist.partition == P::equal && r.global_batch % r.workers != 0;
     },
     [](C c) {
       return c.text("global_batch") + " does not divide evenly over " + std::to_string(c.run().workers) +
              " workers; use a multiple of workers or batch_per_worker";
     },
     "cpp/test_train_config.cpp:GlobalBatchSplitsOverWorkers"},
    // Dynamic loss scaling changes the scale from the gradients every rank sees: under a
    // parameter server only rank 0 sees them, so the ranks' scales would drift apart.
    {{"loss_scale.mode", "precision", "dist.allreduce"}, kConfig,
     [](C c) {
       return c.run().effective_loss_scale() == LossScaleMode::dynamic && strategy(c) == S::sync &&
              allreduce(c) == AllreduceAlgorithm::ps && c.run().workers > 1;
     },
     [](C) {
       return std::string("dynamic loss scaling (the fp16 default) needs every rank to see the averaged gradients, and "
                          "dist.allreduce ps updates on rank 0 only; use another dist.allreduce or loss_scale.mode: static");
     },
     "cpp/test_config_rules.cpp:DynamicLossScalingNeedsEveryRankToSeeTheSums"},

    // The data set and its format.
    {{"dataset.format", "dataset.name"}, kConfig, [](C c) { return !format_fits(c); },
     [](C c) {
       const DataNames& data = data_names();
       const std::string& format = c.run().dataset.format, &name = c.run().dataset.name;
       const bool later = std::find(data.reserved.begin(), data.reserved.end(), format) != data.reserved.end();
       return "format '" + format + "' " +
              (later ? "is not implemented in this build" : "does not fit data set '" + name + "'") + "; data set '" +
              name + "' accepts: " + join(formats_of(c)) + " (leave dataset.format out for its own format)";
     },
     "cpp/test_run_config.cpp:ImpossibleValues"},
    {{"dataset.shuffle_buffer", "dataset.format"}, kConfig,
     [](C c) { return c.run().dataset.shuffle_buffer > 0 && c.run().dataset.format != "records"; },
     [](C c) {
       return "a shuffle buffer is for dataset.format records; '" + c.run().dataset.format +
              "' is shuffled in full (leave dataset.shuffle_buffer out)";
     },
     "cpp/test_config_rules.cpp:AShuffleBufferIsForRecords"},

    // ranks.*: one entry per worker, for the workers of sync and weight_avg.
    {{"ranks.backend", "ranks.threads", "workers"}, kConfig,
     [](C c) { return rank_entries(c) > 0 && rank_entries(c) != c.run().workers; },
     [](C c) {
       const std::string workers = std::to_string(c.run().workers);
       return std::to_string(rank_entries(c)) + " entries for " + workers +
              " workers; give one entry per rank (workers: " + workers + ")";
     },
     "python/test_dist_hetero.py:test_per_rank_settings_that_do_not_fit_are_config_errors"},
    {{"ranks.backend", "ranks.threads", "dist.strategy"}, kConfig,
     [](C c) { return rank_entries(c) > 0 && (strategy(c) == S::async_ps || strategy(c) == S::hogwild); },
     [](C c) {
       return "per-rank settings apply to the workers of sync and weight_avg, not to dist.strategy " +
              c.text("dist.strategy") + "; remove ranks, or use backend and threads";
     },
     "cpp/test_config_rules.cpp:PerRankSettingsAreForSyncAndWeightAveraging"},
    {{"dist.allreduce", "ranks.backend"}, kConfig,
     [](C c) { return c.run().mixed_backends() && allreduce(c) == AllreduceAlgorithm::shm; },
     [](C c) {
       return "shm maps host ranks' arenas into one shared window, which ranks on a device backend (" +
              join(c.run().backend_names()) + " in ranks.backend) cannot join; use dist.allreduce mpi, ring, tree or ps";
     },
     "python/test_dist_hetero.py:test_per_rank_settings_that_do_not_fit_are_config_errors"},
    {{"dist.allreduce", "ranks.backend", "dist.hetero_allreduce"}, kConfig,
     [](C c) {
       return c.run().mixed_backends() && allreduce(c) == AllreduceAlgorithm::nccl && !c.run().dist.hetero_allreduce_device;
     },
     [](C c) {
       return "nccl reduces GPU memory on every rank, and ranks.backend mixes " + join(c.run().backend_names()) +
              "; set dist.hetero_allreduce: device (the CPU ranks' gradients are summed on their node's GPU), or use "
              "an MPI algorithm (mpi, ring, tree, ps: device gradients are staged through host memory)";
     },
     "python/test_dist_hetero.py:test_per_rank_settings_that_do_not_fit_are_config_errors"},

    // `gpu` against the backend: a CPU backend computes on no GPU, a GPU backend on some GPU
    // (which one, the device check says when the run starts: train/capabilities.cpp). With
    // ranks.backend, `gpu` is what the ranks on a GPU backend expect.
    {{"gpu", "backend", "ranks.backend"}, kConfig, [](C c) { return !on_gpu(c) && c.run().gpu != GpuGeneration::none; },
     [](C c) {
       const bool any = c.run().gpu == GpuGeneration::any;
       const std::string gpu = gpu_generation_name(c.run().gpu);
       return "'" + gpu + "' expects " + (any ? std::string("a GPU") : "GPU generation '" + gpu + "'") + " but backend '" +
              backends_text(c) + "' (" + c.cfg.locate(c.run().rank_backends.empty() ? "backend" : "ranks.backend") +
              ") computes on the CPU (GPU generation none); set backend: cuda to run on " +
              (any ? std::string("a GPU") : "a " + gpu) + ", or gpu: none";
     },
     "cpp/test_run_config.cpp:GpuIsAGenerationCheckedAgainstTheBackend"},
    {{"gpu", "backend", "ranks.backend"}, kConfig, [](C c) { return on_gpu(c) && c.run().gpu == GpuGeneration::none; },
     [](C c) {
       std::vector<std::string> gpus = accepted_gpu_generations();
       gpus.erase(std::remove(gpus.begin(), gpus.end(), "none"), gpus.end());
       return "'none' but backend '" + backends_text(c) + "' computes on a GPU; say which generation the run expects, or "
              "gpu: any (accepted: " + join(gpus, " | ") + "; leaving gpu out means any)";
     },
     "cpp/test_run_config.cpp:GpuIsAGenerationCheckedAgainstTheBackend"},

    // Heterogeneous workers (docs/distributed.md): the partition's own keys, the emulated slowdown,
    // static shares against the workers and the global batch.
    {{"dist.shares", "dist.partition"}, kConfig,
     [](C c) { return c.given("dist.shares") && !partition_in(c, {P::static_}); },
     [](C c) { return partition_only(c, "static"); },
     "python/test_dist_hetero.py:test_shares_that_do_not_fit_are_config_errors"},
    {{"dist.calibration_steps", "dist.share_quantum", "dist.partition"}, kConfig,
     [](C c) {
       return (c.given("dist.calibration_steps") || c.given("dist.share_quantum")) &&
              !partition_in(c, {P::measured, P::adaptive});
     },
     [](C c) { return partition_only(c, "measured or adaptive"); },
     "cpp/test_config_rules.cpp:PartitionSettingsApplyToTheirPartitions"},
    {{"dist.rebalance_steps", "dist.partition"}, kConfig,
     [](C c) { return c.given("dist.rebalance_steps") && !partition_in(c, {P::adaptive}); },
     [](C c) { return partition_only(c, "adaptive"); },
     "cpp/test_train_config.cpp:PartitionSharesAndEmulatedSlowdown"},
    {{"dist.emulate_slowdown.factor", "dist.emulate_slowdown.rank"}, kConfig,
     [](C c) { return c.given("dist.emulate_slowdown.factor") && !c.given("dist.emulate_slowdown.rank"); },
     [](C) { return std::string("says how much slower, but not which rank; add dist.emulate_slowdown.rank"); },
     "python/test_dist_hetero.py:test_shares_that_do_not_fit_are_config_errors"},
    {{"dist.emulate_slowdown.rank", "workers"}, kConfig,
     [](C c) { return c.run().dist.emulate_slowdown_rank >= c.run().workers; },
     [](C c) {
       const int workers = c.run().workers;
       return "rank " + std::to_string(c.run().dist.emulate_slowdown_rank) + " does not exist among " +
              std::to_string(workers) + " workers; use 0.." + std::to_string(workers - 1);
     },
     "python/test_dist_hetero.py:test_shares_that_do_not_fit_are_config_errors"},
    {{"dist.partition", "dist.shares"}, kConfig,
     [](C c) { return partition_in(c, {P::static_}) && !c.given("dist.shares"); },
     [](C c) {
       return "static needs dist.shares, each rank's samples per step summing to the global batch (" +
              std::to_string(c.global_batch()) + ")" + shares_advice(c.cfg, c.global_batch());
     },
     "python/test_dist_hetero.py:test_shares_that_do_not_fit_are_config_errors"},
    {{"dist.shares"}, kConfig, [](C c) { return partition_in(c, {P::static_}) && !static_shares_parse(c); },
     [](C c) {
       return "'" + c.text("dist.shares") + "' is not a list of integers in 1.." + std::to_string(kMostShare) +
              shares_advice(c.cfg, c.global_batch());
     },
     "cpp/test_run_config.cpp:ListValuesInBothSpellings"},
    {{"dist.shares", "workers"}, kConfig,
     [](C c) { return partition_in(c, {P::static_}) && static_cast<int64_t>(shares_of(c).size()) != c.run().workers; },
     [](C c) {
       const std::string workers = std::to_string(c.run().workers);
       return std::to_string(shares_of(c).size()) + " shares for " + workers +
              " workers; give one share per rank (workers: " + workers + ")" + shares_advice(c.cfg, c.global_batch());
     },
     "cpp/test_run_config.cpp:ListValuesInBothSpellings"},
    {{"dist.shares", "global_batch"}, kConfig,
     [](C c) {
       const std::vector<int64_t> shares = shares_of(c);
       return partition_in(c, {P::static_}) && std::accumulate(shares.begin(), shares.end(), int64_t{0}) != c.global_batch();
     },
     [](C c) {
       const std::vector<int64_t> shares = shares_of(c);
       return "the shares " + shares_text(shares) + " sum to " +
              std::to_string(std::accumulate(shares.begin(), shares.end(), int64_t{0})) + ", not to the global batch " +
              std::to_string(c.global_batch()) + "; make them sum to it (or change global_batch)" +
              shares_advice(c.cfg, c.global_batch());
     },
     "python/test_cli_config_input.py:test_wrong_shares_name_the_yaml_form_and_both_set_forms"},
    {{"dist.share_quantum", "dist.partition"}, kConfig,
     [](C c) {
       const int64_t quantum = c.run().dist.share_quantum;
       return partition_in(c, {P::measured, P::adaptive}) &&
              (c.global_batch() % quantum != 0 || c.global_batch() < quantum * c.run().workers);
     },
     [](C c) {
       return "shares in multiples of " + std::to_string(c.run().dist.share_quantum) + " need a global batch (" +
              std::to_string(c.global_batch()) + ") that is a multiple of it and holds one per worker (" +
              std::to_string(c.run().workers) + "); choose another dist.share_quantum or global_batch";
     },
     "python/test_dist_hetero.py:test_shares_that_do_not_fit_are_config_errors"},

    // Gradient compression: of sync, with the algorithms that run it (dist/exchange_strategy.cpp
    // refuses the others), its parameters for their own compressor.
    {{"dist.qsgd_bits", "dist.qsgd_bucket"}, kConfig,
     [](C c) { return compression(c).kind != CompressionKind::qsgd && (c.given("dist.qsgd_bits") || c.given("dist.qsgd_bucket")); },
     [](C c) { return compressor_only(c, CompressionKind::qsgd); },
     "cpp/test_compression.cpp:KeysParseAndImpossibleCombinationsAreRefused"},
    {{"dist.topk_ratio"}, kConfig,
     [](C c) { return compression(c).kind != CompressionKind::topk && c.given("dist.topk_ratio"); },
     [](C c) { return compressor_only(c, CompressionKind::topk); },
     "cpp/test_config_rules.cpp:CompressorSettingsApplyToTheirCompressor"},
    {{"dist.powersgd_rank", "dist.powersgd_warm_start"}, kConfig,
     [](C c) {
       return compression(c).kind != CompressionKind::powersgd &&
              (c.given("dist.powersgd_rank") || c.given("dist.powersgd_warm_start"));
     },
     [](C c) { return compressor_only(c, CompressionKind::powersgd); },
     "cpp/test_config_rules.cpp:CompressorSettingsApplyToTheirCompressor"},
    {{"dist.error_feedback", "dist.compression_warmup_steps"}, kConfig,
     [](C c) {
       return !compression(c).enabled() && (c.given("dist.error_feedback") || c.given("dist.compression_warmup_steps"));
     },
     [](C) {
       return std::string("applies to compressed exchanges, and dist.compression is none; remove it or set "
                          "dist.compression (fp16, bf16, qsgd, topk, powersgd)");
     },
     "cpp/test_compression.cpp:KeysParseAndImpossibleCombinationsAreRefused"},
    {{"dist.compression", "dist.strategy"}, kConfig,
     [](C c) { return compression(c).enabled() && strategy(c) != S::sync; },
     [](C c) {
       return c.text("dist.compression") + " compresses the gradients of dist.strategy sync, not " +
              c.text("dist.strategy") + "; set dist.compression: none or dist.strategy: sync";
     },
     "cpp/test_compression.cpp:KeysParseAndImpossibleCombinationsAreRefused"},
    {{"dist.compression", "dist.allreduce"}, kConfig,
     [](C c) {
       return compression(c).enabled() && (allreduce(c) == AllreduceAlgorithm::ps || allreduce(c) == AllreduceAlgorithm::nccl);
     },
     [](C c) {
       return c.text("dist.compression") + " is not implemented with dist.allreduce " + c.text("dist.allreduce") + " (" +
              c.cfg.locate("dist.allreduce") + "); use dist.allreduce mpi, ring, tree or shm, or dist.compression: none";
     },
     "cpp/test_compression.cpp:KeysParseAndImpossibleCombinationsAreRefused"},

    // loss_reads log holds the losses back, so nothing in the step may need this step's loss on
    // the host: one rank of sync (its verdict is its own loss), or sync with dist.allreduce nccl
    // (the losses combined on the device), without cuda.sync_phases (which reads it at once).
    {{"loss_reads"}, kConfig, [](C c) { return c.run().loss_reads == LossReads::log && log_reads_cannot_hold(c); },
     [](C c) {
       const RunConfig& r = c.run();
       return "'log' reads the loss every log_every steps only, which needs a step whose verdict is the rank's own "
              "loss (one worker of dist.strategy sync) or whose losses are combined on the device (dist.strategy sync "
              "with dist.allreduce nccl); this run has " + std::to_string(r.workers) + " worker(s) of dist.strategy " +
              c.text("dist.strategy") + " with dist.allreduce " + c.text("dist.allreduce") +
              (r.dist.hetero_allreduce_device ? " and dist.hetero_allreduce device" : "") +
              ", whose exchange combines the losses on the host every step; remove loss_reads or set it to step";
     },
     "python/test_cli_loss_reads.py:test_log_reads_need_a_step_that_does_not_combine_the_losses_on_the_host"},
    {{"loss_reads", "cuda.sync_phases"}, kConfig,
     [](C c) { return c.run().loss_reads == LossReads::log && c.run().cuda_sync_phases; },
     [](C) {
       return std::string("'log' reads the loss every log_every steps only, and cuda.sync_phases: true reads it right "
                          "after each forward; drop one of them");
     },
     "python/test_cli_loss_reads.py:test_log_reads_need_a_step_that_does_not_combine_the_losses_on_the_host"},
    // cuda.reduced_precision_reduction chooses among the graph API's engines; the legacy calls
    // have no such choice, so the key would change nothing there.
    {{"cuda.reduced_precision_reduction", "cuda.conv_api"}, kConfig,
     [](C c) { return c.run().cuda_reduced_precision_reduction && c.run().cuda_conv_api != ConvApi::graph; },
     [](C) {
       return std::string("true selects among cuDNN's graph API engines, and this run plans its convolutions with the "
                          "legacy calls (cuda.conv_api unset or legacy); set cuda.conv_api: graph or remove the key");
     },
     "python/test_cuda_keys.py:test_reduced_precision_reduction_needs_the_graph_api_and_stays_out_of_the_config_id_when_unset"},

    // When a run starts: what the training loop cannot execute (predict and trainscale-sim price it).
    {{"dist.strategy", "backend"}, kRun, [](C c) { return strategy(c) == S::hogwild && has_cuda(c); },
     [](C) { return std::string("hogwild shares one host weight arena between threads; use backend cpu or ref"); },
     "cpp/test_config_rules.cpp:RunRulesHoldWhenARunStarts"},
    {{"dist.strategy", "backend"}, kRun, [](C c) { return strategy(c) == S::async_ps && has_cuda(c); },
     [](C) {
       return std::string("async_ps keeps the weights in the servers' host memory and pushes host gradients; use "
                          "backend cpu or ref");
     },
     "cpp/test_config_rules.cpp:RunRulesHoldWhenARunStarts"},
    {{"dataset.root", "dataset.storage"}, kRun,
     [](C c) {
       const DatasetConfig& d = c.run().dataset;
       return d.storage == "blob" && !is_blob_url(d.root) && d.format != "synthetic";
     },
     [](C c) {
       return "dataset.root '" + c.run().dataset.root + "' is not a URL, and storage blob reads URLs "
              "(http(s)://HOST[:PORT]/PREFIX or s3://BUCKET/PREFIX)";
     },
     "python/test_blob_storage.py:test_storage_and_root_must_agree"},
    {{"dataset.storage", "dataset.root"}, kRun,
     [](C c) {
       const DatasetConfig& d = c.run().dataset;
       return d.storage != "blob" && is_blob_url(d.root) && d.format != "synthetic";
     },
     [](C c) {
       return "dataset.root '" + c.run().dataset.root + "' is a URL; set dataset.storage: blob to read it over the network";
     },
     "python/test_blob_storage.py:test_storage_and_root_must_agree"},
    // dist.hetero_allreduce device: a CPU rank's gradients reach NCCL through its node's GPU rank.
    {{"dist.allreduce", "backend"}, kRun,
     [](C c) {
       return allreduce(c) == AllreduceAlgorithm::nccl && !c.run().dist.hetero_allreduce_device &&
              !non_cuda_backend(c).empty();
     },
     [](C c) {
       return "nccl needs the cuda backend (it reduces GPU memory), and this run's backend is " + non_cuda_backend(c) +
              "; set backend: cuda, or use mpi, ring, tree, ps or shm";
     },
     "cpp/test_config_rules.cpp:RunRulesHoldWhenARunStarts"},
    {{"dist.allreduce", "dist.strategy"}, kRun,
     [](C c) { return allreduce(c) == AllreduceAlgorithm::nccl && strategy(c) != S::sync; },
     [](C c) {
       const std::string s = c.text("dist.strategy");
       return "nccl runs dist.strategy sync, not " + s + "; " + s +
              " on GPUs averages through an MPI algorithm (mpi, ring, tree, ps, shm: staged through host memory)";
     },
     "cpp/test_config_rules.cpp:RunRulesHoldWhenARunStarts"},
    // device sums the GPUs' gradients with NCCL, which the dist.allreduce key names.
    {{"dist.hetero_allreduce", "dist.allreduce"}, kRun,
     [](C c) { return c.run().dist.hetero_allreduce_device && allreduce(c) != AllreduceAlgorithm::nccl; },
     [](C c) {
       return "device sums the gradients on the GPUs with NCCL, and dist.allreduce is " + c.text("dist.allreduce") +
              " (" + c.cfg.locate("dist.allreduce") + "); set dist.allreduce: nccl, or dist.hetero_allreduce: host "
              "(gradients summed in host memory with the MPI algorithms)";
     },
     "python/test_dist_hetero.py:test_hetero_allreduce_device_is_refused_without_a_gpu_path"},
};

}  // namespace

const std::vector<ConfigRule>& config_rules() { return kRules; }

void check_config_rules(const ResolvedConfig& cfg, const std::map<std::string, std::string>& texts, RuleScope scope) {
  const RuleContext c{cfg, texts};
  for (const ConfigRule& rule : kRules) {
    if (rule.scope != scope || !rule.refuses(c)) continue;
    const auto given = std::find_if(rule.keys.begin(), rule.keys.end(), [&](const std::string& k) { return c.given(k); });
    throw ConfigError(cfg.locate(given != rule.keys.end() ? *given : rule.keys.front()) + ": " + rule.message(c));
  }
}

}  // namespace ts
