// Hostile and careless input (docs/reliability.md "Hostile input"): names (campaigns, run ids,
// config ids) that could leave their directory or end a line; job-script header values with a
// grammar (walltime, memory, partition, account, GRES, constraint, select); the range of every
// numeric run-config key (and docs/config.md listing it); the run count of a sweep computed
// before anything is expanded; exclude entries that match nothing; a manifest whose run_id was
// edited together with its hash; and a job script whose header values were tampered with.
#include <gtest/gtest.h>

#include <filesystem>
#include <fstream>
#include <sstream>

#include <unistd.h>

#include "config/run_config.h"
#include "config/schema.h"
#include "core/error.h"
#include "core/file_io.h"
#include "core/names.h"
#include "sweep/campaign.h"
#include "sweep/expand.h"
#include "sweep/scheduler_values.h"
#include "sweep/submit.h"
#include "sweep/sweep_file.h"

namespace fs = std::filesystem;
using namespace ts;

namespace {

const std::string kSource = TRAINSCALE_SOURCE_DIR;
// Values an attacker or a careless user puts where a name goes.
const std::vector<std::string> kHostile = {
    "x\nrm -rf ~", "$(touch pwned)", "`touch pwned`", "a;b", "a'b", "a\"b", "a b", "../up", "a/b", "/abs",
    "..", "-rf", ".hidden", "", std::string(129, 'a'), "tab\there", "del\x7f",
};

std::string config_error(const std::string& text) {
  try {
    parse_run_config(text, "run.yaml", {});
  } catch (const ConfigError& e) {
    return e.what();
  }
  return "";
}

class InputChecks : public ::testing::Test {
 protected:
  fs::path dir;
  void SetUp() override {
    const auto* info = ::testing::UnitTest::GetInstance()->current_test_info();
    dir = fs::temp_directory_path() / (std::string("ts_input_") + info->name() + "_" + std::to_string(::getpid()));
    fs::remove_all(dir);
    fs::create_directories(dir);
    std::ofstream(dir / "base.yaml") << "model: lenet\nbatch_per_worker: 64\nsteps: 5\nthreads: 1\n";
  }
  void TearDown() override { fs::remove_all(dir); }
  SweepFile sweep(const std::string& text) {
    std::ofstream(dir / "sweep.yaml") << text;
    return load_sweep_file((dir / "sweep.yaml").string());
  }
  std::string sweep_error(const std::string& text) {
    try {
      expand_sweep(sweep(text));
    } catch (const ConfigError& e) {
      return e.what();
    }
    return "";
  }
};

}  // namespace

TEST(Names, HostileNamesAreRefused) {
  for (const char* ok : {"quickstart", "lenet_fmnist", "a1b2c3d4e5f6-r0", "v1.2+cuda", "_x"}) EXPECT_EQ(name_problem(ok), "") << ok;
  for (const auto& bad : kHostile) {
    EXPECT_NE(name_problem(bad), "") << bad;
    try {
      check_name(bad, "campaign name", "sweep.yaml:1", "campaign");
      FAIL() << bad;
    } catch (const ConfigError& e) {
      const std::string msg = e.what();
      EXPECT_EQ(msg.find("sweep.yaml:1: key 'campaign': "), 0u) << msg;
      EXPECT_EQ(msg.find('\n'), std::string::npos) << "the message stays one line: " << msg;
    }
  }
}

TEST(SchedulerValues, WalltimeGrammar) {
  for (const char* ok : {"00:30:00", "48:00:00", "9999:59:59", "1-12:00:00", "0-00:00:01"})
    EXPECT_EQ(walltime_problem(ok), "") << ok;
  for (const char* bad : {"99:99:99", "soon", "00:00:00", "1-24:00:00", "00:60:00", "30", "", "00:30:00\n#SBATCH --x",
                          "00:30:00; rm -rf ~", "$(date)"})
    EXPECT_NE(walltime_problem(bad), "") << bad;
  EXPECT_NE(walltime_problem("99:99:99").find("minutes and seconds must be 0-59"), std::string::npos);
  EXPECT_EQ(pbs_walltime("1-12:00:00"), "36:00:00");
  EXPECT_EQ(pbs_walltime("0-01:30:00"), "01:30:00");
  EXPECT_EQ(pbs_walltime("00:30:00"), "00:30:00");
}

TEST(SchedulerValues, MemoryAndNameGrammars) {
  for (const char* ok : {"4G", "4000M", "64GB", "64gb", "512k", "2T"}) EXPECT_EQ(memory_problem(ok), "") << ok;
  for (const char* bad : {"lots", "4000", "4 G", "0G", "4G\nrm", "-4G", "4GiB", "$(x)G"}) EXPECT_NE(memory_problem(bad), "") << bad;
  EXPECT_EQ(slurm_memory("64gb"), "64G");
  EXPECT_EQ(pbs_memory("64G"), "64gb");
  EXPECT_EQ(pbs_memory("4000M"), "4000mb");
  for (const char* ok : {"gpu-a100", "debug", "a,b", "workq@server", "PRJ-0042"}) EXPECT_EQ(scheduler_name_problem(ok), "") << ok;
  for (const auto& bad : kHostile)
    if (bad.find_first_of(",@") == std::string::npos && bad != "-rf" && bad != ".hidden" && bad != "..")
      EXPECT_NE(scheduler_name_problem(bad), "") << bad;
  EXPECT_EQ(directive_value_problem("gpu:a100:{gpus_per_node}", DirectiveKind::gres), "");
  EXPECT_EQ(directive_value_problem("(a100|h100)&ib", DirectiveKind::constraint), "");
  EXPECT_EQ(directive_value_problem("gpu_model=a100:gpu_mem=80gb", DirectiveKind::select), "");
  for (const char* bad : {"gpu:4\n#SBATCH --x", "gpu:4;rm", "gpu $(x)", "a'b"})
    for (auto kind : {DirectiveKind::gres, DirectiveKind::constraint, DirectiveKind::select})
      EXPECT_NE(directive_value_problem(bad, kind), "") << bad;
  EXPECT_EQ(env_name_problem("OMP_NUM_THREADS"), "");
  for (const char* bad : {"X; rm -rf ~", "1X", "A-B", "$(x)", ""}) EXPECT_NE(env_name_problem(bad), "") << bad;
  // Megabyte-long values are refused (or accepted) without deep recursion, and messages stay short.
  EXPECT_EQ(env_name_problem(std::string(1 << 20, 'A')), "");
  EXPECT_NE(env_name_problem(std::string(1 << 20, 'A') + "-"), "");
  EXPECT_LT(walltime_problem(std::string(1 << 20, '1')).size(), 300u);
  EXPECT_LT(memory_problem(std::string(1 << 20, '1') + "G").size(), 400u);
  EXPECT_EQ(resource_value_problem("cpus_per_worker", "8"), "");
  EXPECT_NE(resource_value_problem("cpus_per_worker", "0"), "");
  EXPECT_NE(resource_value_problem("qos", "high"), "");
}

TEST(ConfigRanges, EveryNumericKeyHasADocumentedRangeThatHoldsItsDefault) {
  const std::string doc = read_text_file(kSource + "/docs/config.md");
  for (const auto& spec : run_config_schema()) {
    if (spec.type != ValueType::integer && spec.type != ValueType::number) continue;
    ASSERT_TRUE(spec.range.bounded) << spec.key << " has no range (config/schema.cpp)";
    if (!spec.def.empty()) EXPECT_EQ(range_problem(spec.range, std::stod(spec.def)), "") << spec.key;
    // The key's row in docs/config.md names the same range.
    const size_t row = doc.find("| `" + spec.key + "` |");
    ASSERT_NE(row, std::string::npos) << spec.key << " has no row in docs/config.md";
    const std::string line = doc.substr(row, doc.find('\n', row) - row);
    EXPECT_NE(line.find(range_text(spec.type, spec.range)), std::string::npos)
        << spec.key << ": docs/config.md should say " << range_text(spec.type, spec.range) << " in: " << line;
  }
}

TEST(ConfigRanges, OutOfRangeValuesAreRefusedWithTheKey) {
  struct Case {
    const char* yaml;
    const char* expect;
  };
  const Case cases[] = {
      {"threads: 100000\n", "run.yaml:1: key 'threads': must be at most 1024, got 100000 (accepted: 1..1024"},
      {"threads: 4294967297\n", "key 'threads': must be at most 1024"},  // would wrap to 1 as an int
      {"dataset: {prefetch: 5000}\n", "run.yaml:1: key 'dataset.prefetch': must be at most 1024"},
      {"batch_per_worker: 2000000\n", "key 'batch_per_worker': must be at most 1048576"},
      {"epochs: 1e9\n", "key 'epochs': must be at most 100000"},
      {"steps: 99999999999999999999\n", "key 'steps': must be at most 1000000000"},
      {"workers: 0\n", "key 'workers': must be > 0"},
      {"lr: .inf\n", "key 'lr': '.inf' is not a finite number"},
      {"lr: 1e39\n", "key 'lr': must be at most 3e+38"},
      {"seed: -1\n", "key 'seed': must be >= 0"},
      {"momentum: 1\n", "key 'momentum': must be < 1"},
      {"dataset: {root: \"a\\nb\"}\n", "key 'dataset.root': the value contains a newline"},
  };
  for (const auto& c : cases) EXPECT_NE(config_error(c.yaml).find(c.expect), std::string::npos) << c.yaml << config_error(c.yaml);
  EXPECT_EQ(config_error("threads: 1024\nsteps: 1000000000\nlr: 3.0e+38\n"), "");  // the bounds themselves are accepted
}

TEST_F(InputChecks, GiganticSweepsAreRefusedBeforeExpanding) {
  std::string text = "base: base.yaml\nmatrix:\n";
  for (const char* key : {"lr", "momentum", "weight_decay", "seed", "log_every", "eval.target_accuracy", "dropout",
                          "lr_schedule.gamma", "loss_scale.init", "dist.bucket_mb"}) {
    text += std::string("  ") + key + ": [";
    for (int v = 1; v <= 99; ++v) text += (v > 1 ? ", " : "") + std::to_string(v) + "e-3";
    text += "]\n";
  }
  const SweepFile s = sweep(text + "repetitions: 1000000\n");
  EXPECT_EQ(planned_run_count(s), std::numeric_limits<int64_t>::max());  // 99^10 x 10^6 saturates
  std::string e = sweep_error(text);  // 99^10 points: nothing is materialised to say so
  EXPECT_NE(e.find("expands to more than 9e18 runs ((99 x 99"), std::string::npos) << e;
  EXPECT_NE(e.find("more than --max-runs 10000"), std::string::npos) << e;
  text = text.substr(0, text.rfind("  loss_scale.init"));  // 8 dimensions: 99^8 points
  e = sweep_error(text);
  EXPECT_NE(e.find("expands to up to 9227446944279201 runs"), std::string::npos) << e;
  const SweepFile small = sweep("base: base.yaml\nmatrix: {lr: [0.1, 0.2, 0.3]}\nrepetitions: 2\n");
  EXPECT_EQ(planned_run_count(small), 6);
  EXPECT_THROW(expand_sweep(small, 5), ConfigError);
  EXPECT_EQ(expand_sweep(small, 6).runs.size(), 6u);
}

TEST_F(InputChecks, ExcludeEntriesThatMatchNothingAreRefused) {
  const std::string e = sweep_error("base: base.yaml\nmatrix: {dist.allreduce: [ring, tree]}\nexclude:\n"
                                    "  - {dist.allreduce: ring}\n  - {dist.allreduce: rnig}\n");
  EXPECT_NE(e.find("sweep.yaml:5: exclude[1] {dist.allreduce: rnig} matches none of the 2 points"), std::string::npos) << e;
}

TEST_F(InputChecks, HostileCampaignNamesAndSweepValuesAreRefused) {
  for (const auto& bad : kHostile) {
    std::string quoted;  // as a YAML double-quoted scalar
    for (char c : bad) quoted += c == '\n' ? std::string("\\n") : c == '\t' ? std::string("\\t") : c == '"' ? std::string("\\\"")
                                 : c == '\x7f' ? std::string("\\x7f") : std::string(1, c);
    const std::string e = sweep_error("campaign: \"" + quoted + "\"\nbase: base.yaml\n");
    EXPECT_NE(e.find("sweep.yaml:1: key 'campaign'"), std::string::npos) << bad << ": " << e;
  }
  EXPECT_NE(sweep_error("base: base.yaml\nresources: {walltime: \"99:99:99\"}\n").find("sweep.yaml:2: resources key 'walltime'"),
            std::string::npos);
  EXPECT_NE(sweep_error("base: base.yaml\nresources: {mem: lots}\n").find("'lots' is not a memory size"), std::string::npos);
  EXPECT_NE(sweep_error("base: base.yaml\nresources: {partition: \"gpu\\n#SBATCH --x\"}\n").find("resources key 'partition'"),
            std::string::npos);
  std::ofstream(dir / "empty.yaml") << "# nothing\n";
  EXPECT_NE(sweep_error("base: empty.yaml\n").find("sweep.yaml:1: base: run config"), std::string::npos);
}

TEST_F(InputChecks, AManifestRunIdIsCheckedWhereItIsRead) {
  const SweepFile s = sweep("base: base.yaml\nmatrix: {lr: [0.1, 0.2]}\n");
  const Expansion ex = expand_sweep(s);
  const std::string campaign = (dir / "campaign").string();
  write_campaign(campaign, manifest_yaml(ex, "test"), s.path, "");
  for (const std::string bad : {"../../escape-r0", "/tmp/x-r0", "a\\u0007b"}) {
    // Edit the manifest AND its hash, as someone who knows the format would.
    std::string text = manifest_yaml(ex, "test");
    const size_t at = text.find(ex.runs[1].run_id);
    text.replace(at, ex.runs[1].run_id.size(), bad);
    write_file_atomically(campaign + "/manifest.yaml", text);
    write_file_atomically(campaign + "/manifest.hash", manifest_hash(text) + "\n");
    try {
      load_campaign(campaign);
      FAIL() << bad << " was accepted";
    } catch (const ConfigError& e) {
      const std::string msg = e.what();
      EXPECT_NE(msg.find("manifest.yaml:"), std::string::npos) << msg;
      EXPECT_NE(msg.find("key 'run_id'"), std::string::npos) << msg;
    }
  }
}

TEST_F(InputChecks, TamperedHeaderValuesNeverReachAJobScript) {
  const SweepFile s = sweep("campaign: hdr\nbase: base.yaml\n");
  const Expansion ex = expand_sweep(s);
  const std::string campaign = (dir / "campaign").string();
  write_campaign(campaign, manifest_yaml(ex, "test"), s.path, kSource + "/configs/sites/localhost-slurm.yaml");
  Campaign c = load_campaign(campaign);
  JobShape shape = group_by_shape(c, {}).front().shape;
  EXPECT_NO_THROW(render_job_script(c, "slurm", shape, "ts-hdr-s0", campaign + "/jobs/s0.idx", 1, 0));
  auto refused = [&](Campaign cc, JobShape sh, const std::string& what) {
    try {
      render_job_script(cc, "slurm", sh, "ts-" + cc.name + "-s0", campaign + "/jobs/s0.idx", 1, 0);
      ADD_FAILURE() << what << " reached the script";
    } catch (const ConfigError& e) {
      EXPECT_NE(std::string(e.what()).find(what), std::string::npos) << e.what();
    }
  };
  JobShape bad = shape;
  bad.walltime = "00:10:00\nrm -rf ~";
  refused(c, bad, "walltime");
  bad = shape;
  bad.partition = "debug\n#SBATCH --wrap=x";
  refused(c, bad, "partition");
  bad = shape;
  bad.mem = "4G\necho";
  refused(c, bad, "mem");
  Campaign named = c;
  named.name = "x\n#SBATCH --x";
  refused(named, shape, "campaign name");
  Campaign moved = c;
  moved.dir = (dir / "a b").string();  // a path a #SBATCH line cannot quote
  refused(moved, shape, "campaign directory");
}
