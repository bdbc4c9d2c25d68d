// Sweep expansion: counts over matrix x zip x exclude x include x repetitions, determinism,
// id stability when a dimension grows, seeds, the campaign directory, and malformed sweeps.
#include <gtest/gtest.h>
#include <yaml-cpp/yaml.h>

#include <filesystem>
#include <fstream>
#include <set>
#include <sstream>

#include <unistd.h>

#include "core/error.h"
#include "sweep/expand.h"
#include "sweep/site.h"
#include "sweep/sweep_file.h"

namespace fs = std::filesystem;
using namespace ts;

namespace {

const char* kBase = "model: lenet\nbatch_per_worker: 64\nlr: 0.05\nsteps: 5\nthreads: 1\nworkers: 1\n";

// A fresh directory per test with base.yaml in it.
class SweepExpand : public ::testing::Test {
 protected:
  fs::path dir;
  void SetUp() override {
    const auto* info = ::testing::UnitTest::GetInstance()->current_test_info();
    dir = fs::temp_directory_path() / (std::string("ts_sweep_") + info->name() + "_" + std::to_string(::getpid()));
    fs::remove_all(dir);
    fs::create_directories(dir);
    write("base.yaml", kBase);
  }
  void TearDown() override { fs::remove_all(dir); }
  std::string write(const std::string& name, const std::string& text) {
    std::ofstream(dir / name) << text;
    return (dir / name).string();
  }
  Expansion expand(const std::string& sweep_text, const std::string& name = "sweep.yaml") {
    return expand_sweep(load_sweep_file(write(name, sweep_text)));
  }
  // The ConfigError message of expanding `sweep_text` ("" when it does not throw).
  std::string error_of(const std::string& sweep_text) {
    try {
      expand(sweep_text);
    } catch (const ConfigError& e) {
      return e.what();
    }
    return "";
  }
};

const char* kSweep =
    "campaign: counts\n"
    "base: base.yaml\n"
    "matrix:\n"
    "  dist.allreduce: [ring, tree]\n"
    "  lr_schedule.kind: [constant, cosine, step]\n"
    "zip:\n"
    "  bs_lr: {batch_per_worker: [32, 64], lr: [0.02, 0.04]}\n"
    "exclude:\n"
    "  - {dist.allreduce: tree, lr_schedule.kind: step}\n"
    "  - {dist.allreduce: ring, lr_schedule.kind: cosine, batch_per_worker: 64.0}\n"
    "include:\n"
    "  - {dist.allreduce: ps, lr: 0.1}\n"
    "repetitions: 2\n"
    "resources: {walltime: \"00:20:00\", cpus_per_worker: 1}\n";

}  // namespace

TEST_F(SweepExpand, CountsMatrixZipExcludeIncludeRepetitions) {
  // 2 x 3 matrix x zip of 2 = 12 points; exclude 2 + 1 -> 9; include 1 -> 10; x 2 = 20 runs.
  Expansion ex = expand(kSweep);
  ASSERT_EQ(ex.runs.size(), 20u);
  std::set<std::string> run_ids, config_ids;
  for (size_t i = 0; i < ex.runs.size(); ++i) {
    EXPECT_EQ(ex.runs[i].index, static_cast<int64_t>(i));
    EXPECT_EQ(ex.runs[i].repetition, static_cast<int>(i % 2));
    EXPECT_EQ(ex.runs[i].run_id, ex.runs[i].config_id + "-r" + std::to_string(i % 2));
    run_ids.insert(ex.runs[i].run_id);
    config_ids.insert(ex.runs[i].config_id);
  }
  EXPECT_EQ(run_ids.size(), 20u);
  EXPECT_EQ(config_ids.size(), 10u);
  // Order: first matrix key slowest, zip fastest; the include comes last.
  EXPECT_EQ(ex.runs[0].swept.at("dist.allreduce"), "ring");
  EXPECT_EQ(ex.runs[0].swept.at("batch_per_worker"), "32");
  EXPECT_EQ(ex.runs[2].swept.at("batch_per_worker"), "64");
  EXPECT_EQ(ex.runs[19].swept.at("dist.allreduce"), "ps");
  EXPECT_EQ(ex.runs[19].swept.at("lr"), "0.1");
  EXPECT_EQ(ex.runs[19].swept.at("batch_per_worker"), "64");  // include applies to the base
  for (const auto& r : ex.runs)
    EXPECT_FALSE(r.swept.at("dist.allreduce") == "tree" && r.swept.at("lr_schedule.kind") == "step") << r.run_id;
}

TEST_F(SweepExpand, DeterministicManifestAndCampaignDirectory) {
  const std::string m1 = manifest_yaml(expand(kSweep), "trainscale test");
  const std::string m2 = manifest_yaml(expand(kSweep), "trainscale test");
  EXPECT_EQ(m1, m2);
  YAML::Node doc = YAML::Load(m1);
  EXPECT_EQ(doc["campaign"].as<std::string>(), "counts");
  EXPECT_EQ(doc["resources"]["walltime"].as<std::string>(), "00:20:00");
  ASSERT_EQ(doc["runs"].size(), 20u);
  EXPECT_EQ(doc["runs"][3]["index"].as<int>(), 3);
  EXPECT_EQ(doc["runs"][3]["config"]["model"].as<std::string>(), "lenet");
  EXPECT_TRUE(doc["runs"][3]["config"]["dist"]["allreduce"].IsDefined());

  const std::string out = (dir / "campaign").string();
  write_campaign(out, m1, (dir / "sweep.yaml").string(), "");
  write_campaign(out, m1, (dir / "sweep.yaml").string(), "");  // identical: idempotent
  EXPECT_TRUE(fs::is_regular_file(dir / "campaign" / "manifest.yaml"));
  EXPECT_TRUE(fs::is_regular_file(dir / "campaign" / "manifest.hash"));
  EXPECT_TRUE(fs::is_regular_file(dir / "campaign" / "sweep.yaml"));
  EXPECT_TRUE(fs::is_directory(dir / "campaign" / "runs"));
  std::ifstream in(dir / "campaign" / "manifest.hash");
  std::string hash;
  in >> hash;
  EXPECT_EQ(hash, manifest_hash(m1));
  try {
    write_campaign(out, m1 + "# changed\n", (dir / "sweep.yaml").string(), "");
    FAIL() << "a different manifest must be refused";
  } catch (const ConfigError& e) {
    EXPECT_NE(std::string(e.what()).find("new --out"), std::string::npos) << e.what();
  }
}

TEST_F(SweepExpand, IdsStableWhenADimensionGrows) {
  Expansion small = expand("base: base.yaml\nmatrix:\n  dist.allreduce: [ring, tree]\n  lr: [0.01, 0.02]\n");
  Expansion grown = expand("base: base.yaml\nmatrix:\n  dist.allreduce: [ring, tree, ps]\n  lr: [0.01, 0.02, 0.03]\n");
  ASSERT_EQ(small.runs.size(), 4u);
  ASSERT_EQ(grown.runs.size(), 9u);
  std::set<std::string> grown_ids;
  for (const auto& r : grown.runs) grown_ids.insert(r.run_id);
  for (const auto& r : small.runs) EXPECT_TRUE(grown_ids.count(r.run_id)) << r.run_id << " lost when the matrix grew";
}

TEST_F(SweepExpand, SeedsPerRepetitionDifferAndAreStable) {
  Expansion ex = expand("base: base.yaml\nmatrix: {lr: [0.01, 0.02]}\nrepetitions: 3\n");
  ASSERT_EQ(ex.runs.size(), 6u);
  std::set<uint64_t> seeds;
  for (const auto& r : ex.runs) {
    seeds.insert(r.seed);
    EXPECT_EQ(r.seed, derive_seed(r.config_id, r.repetition));
    EXPECT_LT(r.seed, 1ULL << 31);
    EXPECT_NE(r.config_yaml.find("seed: " + std::to_string(r.seed)), std::string::npos) << r.config_yaml;
  }
  EXPECT_EQ(seeds.size(), 6u);
  EXPECT_EQ(ex.runs[0].config_id, ex.runs[1].config_id);  // config_id does not depend on k
  Expansion again = expand("base: base.yaml\nmatrix: {lr: [0.01, 0.02]}\nrepetitions: 3\n");
  for (size_t i = 0; i < ex.runs.size(); ++i) EXPECT_EQ(ex.runs[i].seed, again.runs[i].seed);
  // A sweep that varies `seed` keeps its seeds.
  Expansion explicit_seed = expand("base: base.yaml\nmatrix: {seed: [7, 8]}\n");
  ASSERT_EQ(explicit_seed.runs.size(), 2u);
  EXPECT_EQ(explicit_seed.runs[0].seed, 7u);
  EXPECT_EQ(explicit_seed.runs[1].seed, 8u);
}

TEST_F(SweepExpand, DuplicatePointsAreMergedFirstWins) {
  Expansion ex = expand("base: base.yaml\nmatrix: {lr: [0.05, 0.1]}\ninclude:\n  - {lr: 0.05}\n  - {dist.allreduce: ring}\n");
  EXPECT_EQ(ex.runs.size(), 2u);  // lr 0.05 is the base; ring is the default all-reduce
}

TEST_F(SweepExpand, UnknownTopLevelKeyWithSuggestion) {
  std::string msg = error_of("base: base.yaml\nmatrx:\n  lr: [0.1]\n");
  EXPECT_NE(msg.find("sweep.yaml:2"), std::string::npos) << msg;
  EXPECT_NE(msg.find("matrx"), std::string::npos) << msg;
  EXPECT_NE(msg.find("did you mean 'matrix'"), std::string::npos) << msg;
}

TEST_F(SweepExpand, UnknownRunConfigKeyWithSuggestion) {
  std::string msg = error_of("base: base.yaml\nmatrix:\n  dist.allreduc: [ring]\n");
  EXPECT_NE(msg.find("dist.allreduc"), std::string::npos) << msg;
  EXPECT_NE(msg.find("dist.allreduce"), std::string::npos) << msg;
}

TEST_F(SweepExpand, ZipLengthMismatchNamesTheGroup) {
  std::string msg = error_of("base: base.yaml\nzip:\n  bs_lr: {batch_per_worker: [32, 64, 128], lr: [0.02, 0.04]}\n");
  EXPECT_NE(msg.find("bs_lr"), std::string::npos) << msg;
  EXPECT_NE(msg.find("batch_per_worker: 3"), std::string::npos) << msg;
  EXPECT_NE(msg.find("lr: 2"), std::string::npos) << msg;
}

TEST_F(SweepExpand, ExclusionLeavingNothing) {
  std::string msg = error_of("base: base.yaml\nmatrix: {dist.allreduce: [ring, tree]}\nexclude:\n  - {workers: 1}\n");
  EXPECT_NE(msg.find("removes all 2"), std::string::npos) << msg;
  // With an include the campaign is not empty.
  EXPECT_EQ(expand("base: base.yaml\nmatrix: {dist.allreduce: [ring]}\nexclude: [{workers: 1}]\ninclude: [{lr: 0.2}]\n").runs.size(), 1u);
}

TEST_F(SweepExpand, WrongTypes) {
  std::string msg = error_of("base: base.yaml\nmatrix:\n  lr: 0.1\n");
  EXPECT_NE(msg.find("expected a list"), std::string::npos) << msg;
  EXPECT_NE(msg.find("sweep.yaml:3"), std::string::npos) << msg;
  msg = error_of("base: base.yaml\nmatrix: [lr]\n");
  EXPECT_NE(msg.find("matrix: expected a mapping"), std::string::npos) << msg;
  msg = error_of("base: base.yaml\nrepetitions: 0\n");
  EXPECT_NE(msg.find("repetitions"), std::string::npos) << msg;
  msg = error_of("base: base.yaml\nexclude: {lr: 0.1}\n");
  EXPECT_NE(msg.find("exclude: expected a list"), std::string::npos) << msg;
  msg = error_of("base: base.yaml\nmatrix:\n  lr: [[0.1]]\n");
  EXPECT_NE(msg.find("scalar"), std::string::npos) << msg;
}

TEST_F(SweepExpand, MissingBaseFileIsNamed) {
  std::string msg = error_of("base: no_such_base.yaml\n");
  EXPECT_NE(msg.find("no_such_base.yaml"), std::string::npos) << msg;
  EXPECT_NE(msg.find("not found"), std::string::npos) << msg;
  msg = error_of("matrix: {lr: [0.1]}\n");
  EXPECT_NE(msg.find("missing `base`"), std::string::npos) << msg;
}

TEST_F(SweepExpand, InvalidPointNamesSweepPointAndKey) {
  std::string msg = error_of("base: base.yaml\nmatrix:\n  dist.allreduce: [ring, bogus]\n");
  EXPECT_NE(msg.find("sweep.yaml"), std::string::npos) << msg;
  EXPECT_NE(msg.find("{dist.allreduce: bogus}"), std::string::npos) << msg;
  EXPECT_NE(msg.find("key 'dist.allreduce'"), std::string::npos) << msg;
}

TEST_F(SweepExpand, DryRunTableListsRunsAndCounts) {
  std::string table = dry_run_table(expand(kSweep));
  EXPECT_NE(table.find("index"), std::string::npos);
  EXPECT_NE(table.find("dist.allreduce"), std::string::npos);
  EXPECT_NE(table.find("20 runs"), std::string::npos) << table;
  EXPECT_NE(table.find("workers=1 gpu=none"), std::string::npos) << table;
}

TEST_F(SweepExpand, RunsNamingWhatTheSiteLacksAreErrors) {
  const std::string site_text =
      "scheduler: slurm\n"
      "gpu:\n  a100: {partition: gpu, gpus_per_node: 4}\n"
      "mpi:\n  openmpi: {launcher: srun}\n"
      "storage:\n  local: {}\n  lustre: {path: /lustre}\n";
  const Site site = parse_site_file(site_text, "cluster.yaml");
  auto site_error = [&](const std::string& sweep_text) {
    try {
      check_expansion_against_site(expand(sweep_text), site);
    } catch (const ConfigError& e) {
      return std::string(e.what());
    }
    return std::string();
  };
  write("base_cuda.yaml", std::string(kBase) + "backend: cuda\n");
  EXPECT_EQ(site_error("base: base_cuda.yaml\nmatrix: {gpu: [a100], mpi_flavor: [openmpi, any], dataset.storage: [lustre, local]}\n"), "");

  std::string e = site_error("base: base_cuda.yaml\nmatrix: {gpu: [a100, v100]}\n");
  EXPECT_NE(e.find("sweep.yaml: run 1"), std::string::npos) << e;
  EXPECT_NE(e.find("{gpu: v100}"), std::string::npos) << e;
  EXPECT_NE(e.find("key 'gpu': 'v100' is not a GPU of site cluster.yaml (its gpu entries: a100); add a `gpu: {v100: {...}}` "
                   "entry that requests a v100"),
            std::string::npos)
      << e;
  // A CUDA base without gpu expects any GPU: the site needs an `any` entry.
  e = site_error("base: base_cuda.yaml\n");
  EXPECT_NE(e.find("key 'gpu': 'any' is not a GPU of site cluster.yaml"), std::string::npos) << e;
  EXPECT_NE(e.find("requests any GPU"), std::string::npos) << e;

  e = site_error("base: base.yaml\nmatrix: {mpi_flavor: [mpich]}\n");
  EXPECT_NE(e.find("key 'mpi_flavor': 'mpich'"), std::string::npos) << e;
  EXPECT_NE(e.find("its mpi entries: openmpi"), std::string::npos) << e;

  e = site_error("base: base.yaml\ninclude:\n  - {dataset.storage: gpfs}\n");
  EXPECT_NE(e.find("key 'dataset.storage': 'gpfs'"), std::string::npos) << e;
  EXPECT_NE(e.find("local, lustre"), std::string::npos) << e;
}

// A GPU generation on a CPU backend is refused at expansion (before anything is submitted),
// naming the point and the key; one generation per point of a gpu dimension otherwise.
TEST_F(SweepExpand, GpuGenerationsAreCheckedPerPoint) {
  std::string e = error_of("base: base.yaml\nmatrix:\n  gpu: [none, v100]\n");
  EXPECT_NE(e.find("{gpu: v100}"), std::string::npos) << e;
  EXPECT_NE(e.find("key 'gpu': 'v100' expects GPU generation 'v100' but backend 'cpu'"), std::string::npos) << e;
  write("base_cuda.yaml", std::string(kBase) + "backend: cuda\n");
  e = error_of("base: base_cuda.yaml\nmatrix:\n  gpu: [v100, a10]\n");
  EXPECT_NE(e.find("{gpu: a10}"), std::string::npos) << e;
  EXPECT_NE(e.find("did you mean 'a100'"), std::string::npos) << e;
  const Expansion ex = expand("base: base_cuda.yaml\nmatrix:\n  gpu: [v100, a100, h100]\n  precision: [fp32, fp16]\n");
  ASSERT_EQ(ex.runs.size(), 6u);
  EXPECT_EQ(ex.runs[0].swept.at("gpu"), "v100");
  EXPECT_EQ(ex.runs[5].swept.at("gpu"), "h100");
  EXPECT_NE(dry_run_table(ex).find("workers=1 gpu=a100 mpi_flavor=any: 2 runs"), std::string::npos) << dry_run_table(ex);
}

TEST_F(SweepExpand, ResourcesKeysAreChecked) {
  EXPECT_EQ(expand("base: base.yaml\nresources: {walltime: \"00:10:00\", cpus_per_worker: 2, workers_per_node: 4, "
                   "partition: gpu, mem: 8G}\n").runs.size(), 1u);
  std::string e = error_of("base: base.yaml\nresources:\n  walltme: \"00:10:00\"\n");
  EXPECT_NE(e.find("sweep.yaml:3"), std::string::npos) << e;
  EXPECT_NE(e.find("did you mean 'walltime'"), std::string::npos) << e;
  e = error_of("base: base.yaml\nresources: {cpus_per_worker: two}\n");
  EXPECT_NE(e.find("'two' is not an integer in 1..999999"), std::string::npos) << e;
}

// A sweep of a few thousand points expands to every run, reports its progress when asked to
// after every point (no assertion on time), and keeps each run's site facts as its config says.
// Under ASan (scripts/sanitize.sh) a tenth of the points: the same code paths, and the 2,500
// points took 150 s of the sanitizer stage's 290 s at -O0 with ASan's allocator.
#if defined(__SANITIZE_ADDRESS__)
constexpr int kBigSweepPoints = 250;
#else
constexpr int kBigSweepPoints = 2500;
#endif
TEST_F(SweepExpand, ThousandsOfPointsExpandWithProgress) {
  const std::string points = std::to_string(kBigSweepPoints), runs = std::to_string(2 * kBigSweepPoints);
  std::string values;
  for (int i = 1; i <= kBigSweepPoints; ++i) values += (i > 1 ? ", " : "") + std::to_string(1e-5 * i);
  const SweepFile sweep = load_sweep_file(
      write("big.yaml", "campaign: big\nbase: base.yaml\nmatrix:\n  lr: [" + values + "]\nrepetitions: 2\n"));
  std::ostringstream lines;
  ExpansionProgress progress(&lines, 0);
  const Expansion ex = expand_sweep(sweep, 10000, &progress);
  ASSERT_EQ(ex.runs.size(), 2u * kBigSweepPoints);
  for (size_t i = 0; i < ex.runs.size(); ++i) ASSERT_EQ(ex.runs[i].index, static_cast<int64_t>(i));
  EXPECT_NE(lines.str().find("sweep expand: expanded 1 of " + points + " points (0%), "), std::string::npos);
  EXPECT_NE(lines.str().find("sweep expand: expanded " + points + " of " + points + " points (100%), "), std::string::npos);
  const std::string manifest = manifest_yaml(ex, "test", &progress);
  EXPECT_NE(lines.str().find("sweep expand: wrote " + runs + " of " + runs + " runs into the manifest (100%)"),
            std::string::npos);
  EXPECT_EQ(YAML::Load(manifest)["runs"].size(), 2u * kBigSweepPoints);
  size_t count = 0;
  for (size_t at = lines.str().find("expanded "); at != std::string::npos; at = lines.str().find("expanded ", at + 1)) ++count;
  EXPECT_EQ(count, static_cast<size_t>(kBigSweepPoints));  // one line per point at --progress-every 0
  for (const ExpandedRun& run : {ex.runs.front(), ex.runs.back()}) {
    const YAML::Node c = YAML::Load(run.config_yaml);
    EXPECT_EQ(run.gpu, c["gpu"] ? c["gpu"].Scalar() : "none");
    EXPECT_EQ(run.mpi_flavor, c["mpi_flavor"].Scalar());
    EXPECT_EQ(run.storage, c["dataset"]["storage"].Scalar());
    EXPECT_EQ(run.capability_key, ex.runs.front().capability_key);
  }
  std::ostringstream quiet;
  ExpansionProgress every_minute(&quiet, 60);
  expand_sweep(load_sweep_file(write("small.yaml", kSweep)), 10000, &every_minute);
  EXPECT_EQ(quiet.str(), "");  // a short expansion prints nothing
}
