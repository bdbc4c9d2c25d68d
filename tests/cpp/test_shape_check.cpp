// Resource shapes against the node (sweep/shape_check.h) and the site keys behind them: `node`
// (also per GPU generation), `requeue`, `signal_seconds`; shapes that can never be scheduled
// (cores, GPUs, memory) are named with their runs and what to change; this machine as the local
// executor's node.
#include <gtest/gtest.h>

#include <filesystem>
#include <fstream>

#include <unistd.h>

#include "core/error.h"
#include "sweep/campaign.h"
#include "sweep/expand.h"
#include "sweep/shape_check.h"
#include "sweep/site.h"
#include "sweep/submit.h"
#include "sweep/sweep_file.h"

namespace fs = std::filesystem;
using namespace ts;

namespace {

const char* kBase = "model: lenet\nbatch_per_worker: 64\nlr: 0.05\nsteps: 5\nthreads: 1\nworkers: 1\n"
                    "dist: {strategy: sync, allreduce: mpi, overlap: false}\n";

const char* kSlurmSite =
    "scheduler: slurm\n"
    "node: {cores: 16, memory_gb: 64}\n"
    "gpu:\n"
    "  a100: {partition: gpu, gres: \"gpu:a100:{gpus_per_node}\", gpus_per_node: 8, node: {cores: 32, gpus: 4}}\n"
    "  h100: {partition: gpu, gres: \"gpu:{gpus_per_node}\", gpus_per_node: 4}\n"
    "mpi:\n  openmpi: {launcher: srun}\n"
    "storage:\n  local: {}\n";

class ShapeCheck : public ::testing::Test {
 protected:
  fs::path dir;
  void SetUp() override {
    dir = fs::temp_directory_path() /
          ("ts_shape_" + std::string(::testing::UnitTest::GetInstance()->current_test_info()->name()) + "_" + std::to_string(::getpid()));
    fs::remove_all(dir);
    fs::create_directories(dir);
    std::ofstream(dir / "base.yaml") << kBase;
    std::ofstream(dir / "base_cuda.yaml") << kBase << "backend: cuda\n";
  }
  void TearDown() override { fs::remove_all(dir); }

  Campaign make_campaign(const std::string& sweep_text, const std::string& site_text) {
    std::ofstream(dir / "site.yaml") << site_text;
    std::ofstream(dir / "sweep.yaml") << sweep_text;
    SweepFile sweep = load_sweep_file((dir / "sweep.yaml").string());
    Expansion ex = expand_sweep(sweep);
    check_expansion_against_site(ex, load_site_file((dir / "site.yaml").string()));
    write_campaign((dir / "campaign").string(), manifest_yaml(ex, "trainscale test"), sweep.path, (dir / "site.yaml").string());
    return load_campaign((dir / "campaign").string());
  }
  std::vector<std::string> problems(const Campaign& c, const std::string& scheduler) {
    return shape_problems(c, group_by_shape(c, {}), scheduler, effective_node(c.site, scheduler));
  }
};

std::string site_error(const std::string& text) {
  try {
    parse_site_file(text, "site.yaml");
  } catch (const ConfigError& e) {
    return e.what();
  }
  return "";
}

bool contains(const std::string& text, const std::string& part) { return text.find(part) != std::string::npos; }

}  // namespace

TEST_F(ShapeCheck, SiteKeysParse) {
  Site s = parse_site_file("scheduler: slurm\nnode: {cores: 64, gpus: 4, memory_gb: 0.5, oversubscribe: true}\n"
                           "requeue: true\nsignal_seconds: 90\n",
                           "site.yaml");
  EXPECT_EQ(s.node.cores, 64);
  EXPECT_EQ(s.node.gpus, 4);
  EXPECT_DOUBLE_EQ(*s.node.memory_gb, 0.5);
  EXPECT_TRUE(s.node.oversubscribe);
  EXPECT_TRUE(s.requeue);
  EXPECT_EQ(s.signal_seconds, 90);
  Site plain = parse_site_file("scheduler: slurm\n", "site.yaml");
  EXPECT_FALSE(plain.node.declared());
  EXPECT_FALSE(plain.requeue);
  EXPECT_EQ(plain.signal_seconds, 0);
  Site gpu = parse_site_file(kSlurmSite, "site.yaml");
  EXPECT_EQ(gpu.gpu.at("a100").node.gpus, 4);
  EXPECT_FALSE(gpu.gpu.at("h100").node.declared());

  EXPECT_TRUE(contains(site_error("scheduler: slurm\nnode: {cores: 0}\n"), "site.yaml:2: key 'node.cores': '0' is not an integer >= 1"));
  EXPECT_TRUE(contains(site_error("scheduler: slurm\nnode: {memory_gb: lots}\n"), "'lots' is not a number > 0"));
  EXPECT_TRUE(contains(site_error("scheduler: slurm\nnode: {core: 4}\n"), "did you mean 'cores'?"));
  EXPECT_TRUE(contains(site_error("scheduler: slurm\nrequeue: maybe\n"), "accepted: true, false"));
  EXPECT_TRUE(contains(site_error("scheduler: slurm\nsignal_seconds: 70000\n"), "accepted: 0 ... 65535"));
  EXPECT_TRUE(contains(site_error("scheduler: pbs\nsignal_seconds: 60\n"), "PBS has no signal ahead of the walltime"));
  EXPECT_TRUE(contains(site_error("scheduler: slurm\ngpu: {a100: {node: {gpu: 4}}}\n"), "gpu.a100.node: unknown key 'gpu'"));
}

TEST_F(ShapeCheck, CoresPerNode) {
  Campaign c = make_campaign("base: base.yaml\nmatrix: {workers: [1, 4], threads: [4, 8]}\n", kSlurmSite);
  // Shapes (workers x cpus per task): 1x4, 1x8, 4x4 (16: fits exactly), 4x8 (32 > 16).
  auto p = problems(c, "slurm");
  ASSERT_EQ(p.size(), 1u);
  EXPECT_TRUE(contains(p[0], "run 3 (" + c.runs[3].run_id + ")")) << p[0];
  EXPECT_TRUE(contains(p[0], "need 4 worker(s) x 8 core(s) = 32 cores on one node, but a node of site site")) << p[0];
  EXPECT_TRUE(contains(p[0], "spread the workers with resources.workers_per_node")) << p[0];
  try {
    check_shapes(c, group_by_shape(c, {}), "slurm");
    FAIL() << "a shape that never fits passed";
  } catch (const ConfigError& e) {
    EXPECT_TRUE(contains(e.what(), "1 resource shape(s) can never be scheduled; nothing was submitted")) << e.what();
  }
  // Oversubscription, when the site accepts it, is not a problem.
  c.site.node.oversubscribe = true;
  EXPECT_TRUE(problems(c, "slurm").empty());
  // A worker alone needing more than a node: only fewer threads help.
  c.site.node.oversubscribe = false;
  c.site.node.cores = 6;
  p = problems(c, "slurm");
  ASSERT_EQ(p.size(), 3u);
  EXPECT_TRUE(contains(p[0], "run 1 (") && contains(p[0], "to at most 6")) << p[0];
}

TEST_F(ShapeCheck, GpusAndMemory) {
  Campaign c = make_campaign("base: base_cuda.yaml\nmatrix: {gpu: [a100, h100], workers: [8]}\n"
                             "resources: {cpus_per_worker: 4, mem: 96G}\n",
                             kSlurmSite);
  auto p = problems(c, "slurm");
  // a100: 8 GPUs per node asked, its nodes have 4 (and 8 x 4 = 32 cores fit its 32); 96G > 64 GiB.
  // h100: no GPU count declared for its nodes; 4 x 4 = 16 cores fit; 96G > 64 GiB.
  ASSERT_EQ(p.size(), 3u) << p[0];
  EXPECT_TRUE(contains(p[0], "ask for 8 GPUs per node, but a node of site site (" + c.site.path +
                                 ", gpu.a100.node) has 4; set the site's gpu.a100.gpus_per_node to at most 4"))
      << p[0];
  EXPECT_TRUE(contains(p[1], "ask for resources.mem 96G per node, but a node of site site")) << p[1];
  EXPECT_TRUE(contains(p[2], "gpu=h100") && contains(p[2], "resources.mem 96G")) << p[2];
  c.site.node.memory_gb = 128;
  EXPECT_EQ(problems(c, "slurm").size(), 1u);
  c.site.gpu.at("a100").node.gpus = 0;
  EXPECT_TRUE(contains(problems(c, "slurm")[0], "ask for GPUs, but the nodes of site"));
}

TEST_F(ShapeCheck, TheLocalExecutorRunsOnThisMachine) {
  const SiteNode here = local_machine_node();
  ASSERT_TRUE(here.cores && here.gpus && here.memory_gb);
  EXPECT_GE(*here.cores, 1);
  EXPECT_GT(*here.memory_gb, 0.0);
  Campaign c = make_campaign("base: base.yaml\nmatrix: {threads: [" + std::to_string(*here.cores + 1) + "]}\n", kSlurmSite);
  // --scheduler local on a Slurm site: this machine, not the site's 16-core nodes.
  EXPECT_EQ(effective_node(c.site, "local").cores, here.cores);
  auto p = problems(c, "local");
  ASSERT_EQ(p.size(), 1u);
  EXPECT_TRUE(contains(p[0], "a node of this machine (local executor) has " + std::to_string(*here.cores))) << p[0];
  EXPECT_FALSE(contains(p[0], "workers_per_node")) << p[0];  // all ranks of a local run share this machine
  EXPECT_TRUE(problems(c, "slurm").empty());
  // A local site that declares its node is taken at its word.
  c.site.scheduler = "local";
  c.site.node = SiteNode{};
  c.site.node.cores = 1000;
  EXPECT_TRUE(problems(c, "local").empty());
}

TEST(MemoryBytes, SlurmAndPbsSpellings) {
  const double gib = 1024.0 * 1024.0 * 1024.0;
  EXPECT_DOUBLE_EQ(*memory_bytes("8G"), 8 * gib);
  EXPECT_DOUBLE_EQ(*memory_bytes("16gb"), 16 * gib);
  EXPECT_DOUBLE_EQ(*memory_bytes("512M"), 0.5 * gib);
  EXPECT_DOUBLE_EQ(*memory_bytes("2048"), 2 * gib);  // Slurm's default unit: MiB
  EXPECT_DOUBLE_EQ(*memory_bytes("1T"), 1024 * gib);
  EXPECT_DOUBLE_EQ(*memory_bytes("1.5G"), 1.5 * gib);
  EXPECT_FALSE(memory_bytes("lots"));
  EXPECT_FALSE(memory_bytes("8 GiB please"));
}
