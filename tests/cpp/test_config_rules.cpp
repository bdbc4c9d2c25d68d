// The table of refused combinations (config/rules.h): every row names keys of the schema and a
// test that exists under tests/; the rows that no other test covers are covered here.
#include <gtest/gtest.h>

#include <filesystem>
#include <fstream>
#include <regex>
#include <sstream>

#include "config/rules.h"
#include "config/run_config.h"
#include "config/schema.h"
#include "core/error.h"

using namespace ts;
namespace fs = std::filesystem;

namespace {

std::string error_of(const std::string& yaml) {
  try {
    parse_run_config(yaml, "cfg.yaml", {});
  } catch (const ConfigError& e) {
    return e.what();
  }
  return "";
}

// The refusal of a valid config when a run starts (the rows of scope run), "" when none.
std::string run_error_of(const std::string& yaml) {
  const ResolvedConfig cfg = parse_run_config(yaml, "cfg.yaml", {});
  try {
    check_config_rules(cfg, cfg.flat, RuleScope::run);
  } catch (const ConfigError& e) {
    return e.what();
  }
  return "";
}

bool has(const std::string& text, const std::string& part) { return text.find(part) != std::string::npos; }

}  // namespace

// "<file under tests/>:<name>": a GoogleTest TEST(Suite, name) or a pytest `def name(` in that file.
TEST(ConfigRules, EveryRowNamesATestThatExists) {
  const fs::path tests = fs::path(TRAINSCALE_SOURCE_DIR) / "tests";
  ASSERT_GT(config_rules().size(), 40u);
  for (const ConfigRule& rule : config_rules()) {
    const size_t colon = rule.test.find(':');
    ASSERT_NE(colon, std::string::npos) << "'" << rule.test << "' is not <file>:<test name>";
    const fs::path file = tests / rule.test.substr(0, colon);
    const std::string name = rule.test.substr(colon + 1);
    ASSERT_TRUE(fs::is_regular_file(file)) << rule.test << ": no file " << file;
    std::ifstream in(file);
    std::stringstream text;
    text << in.rdbuf();
    const std::regex defined(file.extension() == ".py" ? "\\bdef " + name + "\\("
                                                       : "\\bTEST(_F|_P)?\\(\\s*\\w+,\\s*" + name + "\\s*\\)");
    EXPECT_TRUE(std::regex_search(text.str(), defined)) << rule.test << ": " << file << " defines no test " << name;
  }
}

// Its keys, and the "{key}" and "{key@}" of its message, are keys of the schema; a row has a
// message or computes one.
TEST(ConfigRules, EveryRowNamesKeysOfTheSchema) {
  const std::regex placeholder("\\{([^}@]*)@?\\}");
  for (const ConfigRule& rule : config_rules()) {
    ASSERT_FALSE(rule.keys.empty()) << rule.test;
    for (const std::string& key : rule.keys) EXPECT_NE(find_key_spec(key), nullptr) << key << " (" << rule.test << ")";
    EXPECT_NE(rule.message.empty(), rule.computed == nullptr) << rule.test;
    for (std::sregex_iterator m(rule.message.begin(), rule.message.end(), placeholder), end; m != end; ++m)
      EXPECT_NE(find_key_spec((*m)[1]), nullptr) << (*m)[0] << " in " << rule.message;
  }
}

TEST(ConfigRules, DynamicLossScalingNeedsEveryRankToSeeTheSums) {
  std::string e = error_of("workers: 2\nprecision: fp16\ndist: {allreduce: ps}\n");
  EXPECT_TRUE(has(e, "cfg.yaml:2: key 'precision': dynamic loss scaling (the fp16 default)")) << e;
  EXPECT_TRUE(has(e, "dist.allreduce ps updates on rank 0 only; use another dist.allreduce or loss_scale.mode: static")) << e;
  e = error_of("workers: 2\nloss_scale: {mode: dynamic}\ndist: {allreduce: ps}\n");
  EXPECT_TRUE(has(e, "cfg.yaml:2: key 'loss_scale.mode'")) << e;
  EXPECT_EQ(error_of("workers: 2\nprecision: fp16\nloss_scale: {mode: static}\ndist: {allreduce: ps}\n"), "");
  EXPECT_EQ(error_of("workers: 1\nprecision: fp16\ndist: {allreduce: ps}\n"), "");
}

TEST(ConfigRules, AShuffleBufferIsForRecords) {
  const std::string e = error_of("dataset: {shuffle_buffer: 64}\n");
  EXPECT_TRUE(has(e, "cfg.yaml:1: key 'dataset.shuffle_buffer': a shuffle buffer is for dataset.format records; 'idx' "
                     "is shuffled in full")) << e;
  EXPECT_EQ(error_of("dataset: {format: records, shuffle_buffer: 64}\n"), "");
}

TEST(ConfigRules, PerRankSettingsAreForSyncAndWeightAveraging) {
  std::string e = error_of("workers: 2\nranks: {threads: [1, 2]}\ndist: {strategy: async_ps}\n");
  EXPECT_TRUE(has(e, "cfg.yaml:2: key 'ranks.threads': per-rank settings apply to the workers of sync and weight_avg, "
                     "not to dist.strategy async_ps; remove ranks")) << e;
  e = error_of("workers: 1\nranks: [{threads: 2}]\ndist: {strategy: hogwild}\n");
  EXPECT_TRUE(has(e, "not to dist.strategy hogwild")) << e;
  EXPECT_EQ(error_of("workers: 2\nranks: {threads: [1, 2]}\ndist: {strategy: weight_avg}\n"), "");
}

TEST(ConfigRules, PartitionSettingsApplyToTheirPartitions) {
  std::string e = error_of("workers: 2\ndist: {calibration_steps: 3}\n");
  EXPECT_TRUE(has(e, "cfg.yaml:2: key 'dist.calibration_steps': applies to dist.partition measured or adaptive only "
                     "(this run's is equal); remove it or set dist.partition")) << e;
  e = error_of("workers: 2\nglobal_batch: 128\ndist: {partition: static, shares: [64, 64], share_quantum: 8}\n");
  EXPECT_TRUE(has(e, "key 'dist.share_quantum': applies to dist.partition measured or adaptive only")) << e;
  EXPECT_EQ(error_of("workers: 2\ndist: {partition: measured, calibration_steps: 3, share_quantum: 8}\n"), "");
}

TEST(ConfigRules, CompressorSettingsApplyToTheirCompressor) {
  std::string e = error_of("dist: {compression: qsgd, topk_ratio: 0.1}\n");
  EXPECT_TRUE(has(e, "cfg.yaml:1: key 'dist.topk_ratio': applies to dist.compression topk, and this run compresses "
                     "with qsgd; remove it or set dist.compression: topk")) << e;
  e = error_of("dist: {compression: qsgd, qsgd_bits: 4, powersgd_rank: 2}\n");
  EXPECT_TRUE(has(e, "key 'dist.powersgd_rank': applies to dist.compression powersgd")) << e;
  EXPECT_EQ(error_of("dist: {compression: powersgd, powersgd_rank: 2, powersgd_warm_start: false}\n"), "");
}

// Rows of scope run: the config resolves (predict and trainscale-sim price it), a run refuses it.
TEST(ConfigRules, RunRulesHoldWhenARunStarts) {
  std::string e = run_error_of("backend: cuda\ndist: {strategy: hogwild}\n");
  EXPECT_TRUE(has(e, "cfg.yaml:2: key 'dist.strategy': hogwild shares one host weight arena between threads; use "
                     "backend cpu or ref")) << e;
  e = run_error_of("backend: cuda\nworkers: 2\ndist: {strategy: async_ps}\n");
  EXPECT_TRUE(has(e, "key 'dist.strategy': async_ps keeps the weights in the servers' host memory")) << e;
  e = run_error_of("dist: {allreduce: nccl}\n");
  EXPECT_TRUE(has(e, "cfg.yaml:1: key 'dist.allreduce': nccl needs the cuda backend (it reduces GPU memory), and this "
                     "run's backend is cpu; set backend: cuda, or use mpi, ring, tree, ps or shm")) << e;
  e = run_error_of("backend: cuda\ndist: {allreduce: nccl, strategy: weight_avg}\n");
  EXPECT_TRUE(has(e, "key 'dist.allreduce': nccl runs dist.strategy sync, not weight_avg; weight_avg on GPUs averages "
                     "through an MPI algorithm")) << e;
  EXPECT_EQ(run_error_of("backend: cuda\ndist: {allreduce: nccl}\n"), "");
  EXPECT_EQ(run_error_of("workers: 2\nranks: {backend: [cuda, cuda]}\ndist: {allreduce: nccl}\n"), "");
  EXPECT_EQ(run_error_of(""), "");
}
