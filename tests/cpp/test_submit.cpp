// Submitting campaigns: the frozen manifest read back (and refused when edited), runs grouped
// by resource shape, arrays split over the site's max array size, the launcher commands,
// golden Slurm and PBS scripts (tests/golden/), run states from markers and the status JSON.
// Set TRAINSCALE_UPDATE_GOLDEN=1 to rewrite the golden files after an intended change.
#include <gtest/gtest.h>

#include <chrono>
#include <cstdlib>
#include <filesystem>
#include <fstream>
#include <sstream>

#include <unistd.h>

#include "core/error.h"
#include "core/file_io.h"
#include "core/host_info.h"
#include "core/run_marker.h"
#include "metrics/hdf5_file.h"
#include "metrics/run_file_check.h"
#include "sweep/campaign.h"
#include "sweep/expand.h"
#include "sweep/launcher_end.h"
#include "sweep/scheduler_values.h"
#include "sweep/shape_check.h"
#include "sweep/site.h"
#include "sweep/submit.h"
#include "sweep/sweep_file.h"
#include "sweep/task_claim.h"

namespace fs = std::filesystem;
using namespace ts;

namespace {

const std::string kSource = TRAINSCALE_SOURCE_DIR;
const char* kBase = "model: lenet\nbatch_per_worker: 64\nlr: 0.05\nsteps: 5\nthreads: 1\nworkers: 1\n"
                    "dist: {strategy: sync, allreduce: mpi, overlap: false}\n";

class Submit : public ::testing::Test {
 protected:
  fs::path dir;
  void SetUp() override {
    const auto* info = ::testing::UnitTest::GetInstance()->current_test_info();
    dir = fs::temp_directory_path() / (std::string("ts_submit_") + info->name() + "_" + std::to_string(::getpid()));
    fs::remove_all(dir);
    fs::create_directories(dir);
    std::ofstream(dir / "base.yaml") << kBase;
    std::ofstream(dir / "base_cuda.yaml") << kBase << "backend: cuda\n";  // GPU sweeps
  }
  void TearDown() override { fs::remove_all(dir); }

  // Expands `sweep_text` against `site_path` into dir/campaign and loads it back.
  Campaign make_campaign(const std::string& sweep_text, const std::string& site_path) {
    std::ofstream(dir / "sweep.yaml") << sweep_text;
    SweepFile sweep = load_sweep_file((dir / "sweep.yaml").string());
    Expansion ex = expand_sweep(sweep);
    if (!site_path.empty()) check_expansion_against_site(ex, load_site_file(site_path));
    write_campaign((dir / "campaign").string(), manifest_yaml(ex, "trainscale test"), sweep.path, site_path);
    return load_campaign((dir / "campaign").string());
  }
};

std::string read(const fs::path& p) {
  std::ifstream in(p);
  std::ostringstream ss;
  ss << in.rdbuf();
  return ss.str();
}

// Compares `text` with tests/golden/<name> (rewrites it with TRAINSCALE_UPDATE_GOLDEN=1).
void expect_golden(const std::string& name, const std::string& text) {
  const fs::path golden = fs::path(kSource) / "tests" / "golden" / name;
  if (std::getenv("TRAINSCALE_UPDATE_GOLDEN")) std::ofstream(golden) << text;
  ASSERT_TRUE(fs::exists(golden)) << golden << " missing; run with TRAINSCALE_UPDATE_GOLDEN=1 to create it";
  EXPECT_EQ(read(golden), text) << "generated script differs from " << golden
                                << " (TRAINSCALE_UPDATE_GOLDEN=1 rewrites it after an intended change)";
}

const char* kGpuSweep =
    "campaign: golden\n"
    "base: base_cuda.yaml\n"
    "matrix:\n"
    "  workers: [4, 8]\n"
    "  gpu: [a100]\n"
    "  mpi_flavor: [openmpi]\n"
    "  lr: [0.05, 0.1]\n"
    "resources: {walltime: \"00:30:00\", cpus_per_worker: 8, mem: 64G}\n";

}  // namespace

TEST_F(Submit, ManifestRoundTripsAndAnEditedManifestIsRefused) {
  Campaign c = make_campaign("base: base.yaml\nmatrix: {lr: [0.01, 0.02, 0.03]}\nrepetitions: 2\n", "");
  ASSERT_EQ(c.runs.size(), 6u);
  EXPECT_EQ(c.name, "sweep");
  EXPECT_FALSE(c.has_site);
  EXPECT_EQ(c.site.scheduler, "local");
  for (size_t i = 0; i < c.runs.size(); ++i) {
    EXPECT_EQ(c.runs[i].index, static_cast<int64_t>(i));
    EXPECT_EQ(c.runs[i].run_id, c.runs[i].config_id + "-r" + std::to_string(i % 2));
    EXPECT_NE(c.runs[i].config_yaml.find("model: \"lenet\""), std::string::npos) << c.runs[i].config_yaml;
    EXPECT_GT(c.runs[i].line, 1);
  }
  // Any edit to the frozen manifest (here: one learning rate) is refused.
  const fs::path manifest = dir / "campaign" / "manifest.yaml";
  std::string text = read(manifest);
  text.replace(text.find("lr: 0.02"), 8, "lr: 0.05");
  std::ofstream(manifest) << text;
  try {
    load_campaign((dir / "campaign").string());
    FAIL() << "an edited manifest was accepted";
  } catch (const ConfigError& e) {
    EXPECT_NE(std::string(e.what()).find("changed after it was frozen"), std::string::npos) << e.what();
  }
  fs::remove_all(dir / "campaign");
  EXPECT_THROW(load_campaign((dir / "campaign").string()), ConfigError);
}

// The manifest's ids are recomputed from its configs when it is loaded (issue 35): every way of
// expanding a point passes (derived seeds from a base seed other than the default, a point that
// sets its seed, a list key), and edits that keep manifest.hash in step are refused naming the
// entry: another lr under the old config_id, two entries of one run_id.
TEST_F(Submit, ManifestIdsAreRecomputedFromTheConfigs) {
  std::ofstream(dir / "base42.yaml") << kBase << "seed: 42\n";
  Campaign c = make_campaign("base: base42.yaml\nmatrix: {lr: [0.01, 0.02]}\nrepetitions: 2\n"
                             "include: [{lr: 0.03, seed: 7}, {workers: 2, dist.partition: static, dist.shares: \"48,80\"}]\n",
                             "");
  ASSERT_EQ(c.runs.size(), 8u);
  const fs::path manifest = dir / "campaign" / "manifest.yaml";
  const std::string frozen = read(manifest);
  EXPECT_NE(frozen.find("\nbase_seed: 42\n"), std::string::npos) << frozen;
  auto load_edited = [&](const std::string& text) -> std::string {
    write_file_atomically(manifest.string(), text);
    write_file_atomically((dir / "campaign" / "manifest.hash").string(), manifest_hash(text) + "\n");  // in step
    try {
      load_campaign((dir / "campaign").string());
      return "";
    } catch (const ConfigError& e) {
      return e.what();
    }
  };
  EXPECT_EQ(load_edited(frozen), "");
  // Another learning rate under the old ids.
  std::string text = frozen;
  text.replace(text.find("lr: 0.02"), 8, "lr: 0.05");
  const int lr_entry = c.runs[2].line;
  std::string e = load_edited(text);
  EXPECT_NE(e.find("manifest.yaml:" + std::to_string(lr_entry) + ": run 2: config_id '" + c.runs[2].config_id +
                   "' is not the hash of its config"),
            std::string::npos)
      << e;
  EXPECT_NE(e.find("Expand the sweep into a new campaign directory"), std::string::npos) << e;
  // Two points given one run_id (and config_id, so that the run_id agrees with it).
  text = frozen;
  for (const std::string& id : {c.runs[2].run_id, c.runs[2].config_id}) {
    const std::string to = id == c.runs[2].run_id ? c.runs[0].run_id : c.runs[0].config_id;
    text.replace(text.find("\"" + id + "\""), id.size() + 2, "\"" + to + "\"");
  }
  e = load_edited(text);
  EXPECT_NE(e.find(":" + std::to_string(lr_entry) + ": run 2: config_id '" + c.runs[0].config_id + "' is not the hash"),
            std::string::npos)
      << e;
  // The same entry twice (index and nothing else changed): one run file for two entries.
  text = frozen;
  const size_t second = text.find("  - index: 1\n"), third = text.find("  - index: 2\n");
  text.replace(second, third - second, text.substr(text.find("  - index: 0\n"), second - text.find("  - index: 0\n")));
  text.replace(text.find("  - index: 0\n", text.find("  - index: 0\n") + 1), 13, "  - index: 1\n");
  e = load_edited(text);
  EXPECT_NE(e.find(": run 1: run_id '" + c.runs[0].run_id + "' is also run 0's (line " + std::to_string(c.runs[0].line) + ")"),
            std::string::npos)
      << e;
  // A run_id that is not <config_id>-r<repetition>.
  text = frozen;
  text.replace(text.find("repetition: 1"), 13, "repetition: 0");
  e = load_edited(text);
  EXPECT_NE(e.find(": run 1: run_id '" + c.runs[1].run_id + "' is not its config_id and repetition ('" + c.runs[1].config_id +
                   "-r0')"),
            std::string::npos)
      << e;
}

TEST_F(Submit, AsyncPsLaunchesItsServersAsRanksToo) {
  Campaign c = make_campaign("base: base.yaml\nmatrix: {workers: [2], dist.strategy: [async_ps], dist.servers: [1, 2]}\n",
                             kSource + "/configs/sites/localhost-slurm.yaml");
  auto groups = group_by_shape(c, {});
  ASSERT_EQ(groups.size(), 2u);
  EXPECT_EQ(groups[0].shape.workers, 3);  // 2 workers + 1 server
  EXPECT_EQ(groups[1].shape.workers, 4);  // 2 workers + 2 servers
}

TEST_F(Submit, GroupsByShapeAndSplitsOverTheMaxArraySize) {
  Campaign c = make_campaign("base: base.yaml\nmatrix: {workers: [1, 2], lr: [0.01, 0.02, 0.03]}\n"
                             "resources: {walltime: \"00:05:00\"}\n",
                             kSource + "/configs/sites/localhost-slurm.yaml");
  auto groups = group_by_shape(c, {});
  ASSERT_EQ(groups.size(), 2u);
  EXPECT_EQ(groups[0].shape.workers, 1);
  EXPECT_EQ(groups[0].indices, (std::vector<int64_t>{0, 1, 2}));
  EXPECT_EQ(groups[1].shape.workers, 2);
  EXPECT_EQ(groups[1].shape.nodes, 1);
  EXPECT_EQ(groups[1].shape.tasks_per_node, 2);
  EXPECT_EQ(groups[1].shape.cpus_per_task, 1);  // the runs' threads
  EXPECT_EQ(groups[1].shape.partition, "debug");
  EXPECT_EQ(groups[1].shape.walltime, "00:05:00");
  EXPECT_EQ(groups[1].shape.mpi, "openmpi");
  EXPECT_EQ(groups[1].indices, (std::vector<int64_t>{3, 4, 5}));
  // A subset keeps its order.
  groups = group_by_shape(c, {5, 1});
  ASSERT_EQ(groups.size(), 2u);
  EXPECT_EQ(groups[0].indices, (std::vector<int64_t>{5}));
  EXPECT_EQ(groups[1].indices, (std::vector<int64_t>{1}));

  c.site.max_array_size = 2;
  auto scripts = write_job_scripts(c, "slurm", group_by_shape(c, {}), 1, "");
  ASSERT_EQ(scripts.size(), 4u);  // 3 runs per shape in arrays of at most 2
  EXPECT_EQ(fs::path(scripts[0].script).filename(), "s0-p0.slurm");
  EXPECT_EQ(fs::path(scripts[1].script).filename(), "s0-p1.slurm");
  EXPECT_EQ(fs::path(scripts[3].index_file).filename(), "s1-p1.idx");
  EXPECT_EQ(scripts[0].count, 2);
  EXPECT_EQ(scripts[1].count, 1);
  EXPECT_EQ(read(scripts[0].index_file), "0\n1\n");
  EXPECT_EQ(read(scripts[1].index_file), "2\n");
  EXPECT_EQ(read(scripts[2].index_file), "3\n4\n");
  EXPECT_EQ(read(scripts[3].index_file), "5\n");
  EXPECT_NE(read(scripts[0].script).find("#SBATCH --array=0-1%1\n"), std::string::npos);
  EXPECT_NE(read(scripts[1].script).find("#SBATCH --array=0-0%1\n"), std::string::npos);
  EXPECT_NE(read(scripts[2].script).find("srun --mpi=pmix -n 2 "), std::string::npos);
  EXPECT_TRUE((fs::status(scripts[0].script).permissions() & fs::perms::owner_exec) != fs::perms::none);
}

TEST_F(Submit, LaunchCommands) {
  SiteMpi m;
  m.binary = "/opt/ts/bin/trainscale";
  m.launcher = "mpirun";
  m.launcher_args = {"--oversubscribe"};
  EXPECT_EQ(launch_command(m, 2), (std::vector<std::string>{"mpirun", "-np", "2", "--oversubscribe", "/opt/ts/bin/trainscale"}));
  m.launcher = "srun";
  m.srun_mpi = "pmi2";
  m.launcher_args = {};
  EXPECT_EQ(launch_command(m, 4), (std::vector<std::string>{"srun", "--mpi=pmi2", "-n", "4", "/opt/ts/bin/trainscale"}));
  m.launcher = "mpiexec";
  EXPECT_EQ(launch_command(m, 3), (std::vector<std::string>{"mpiexec", "-n", "3", "/opt/ts/bin/trainscale"}));
  m.launcher_command = "mpiexec.mpich";  // the program; arguments as for mpiexec
  EXPECT_EQ(launch_command(m, 3), (std::vector<std::string>{"mpiexec.mpich", "-n", "3", "/opt/ts/bin/trainscale"}));
  m.launcher_command = "";
  m.binary = "";  // the running binary
  EXPECT_TRUE(fs::path(launch_command(m, 1).back()).is_absolute());
  m.binary = "build-mpich/bin/trainscale";  // relative to the current directory
  EXPECT_EQ(launch_command(m, 1).back(), (fs::current_path() / "build-mpich/bin/trainscale").string());
}

TEST_F(Submit, GoldenSlurmScript) {
  Campaign c = make_campaign(kGpuSweep, kSource + "/configs/sites/example-slurm-gpu.yaml");
  auto groups = group_by_shape(c, {});
  ASSERT_EQ(groups.size(), 2u);
  const JobShape& s = groups[1].shape;  // 8 workers on 4-GPU nodes
  EXPECT_EQ(s.nodes, 2);
  EXPECT_EQ(s.tasks_per_node, 4);
  EXPECT_EQ(s.gpus_per_node, 4);
  EXPECT_EQ(s.gres, "gpu:a100:4");
  EXPECT_EQ(s.partition, "gpu-a100");
  EXPECT_EQ(s.cpus_per_task, 8);
  c.dir = "/scratch/campaigns/golden";  // deterministic paths in the script
  expect_golden("slurm_gpu.slurm", render_job_script(c, "slurm", s, "ts-golden-s1", "/scratch/campaigns/golden/jobs/s1.idx",
                                                     groups[1].indices.size(), 16));
}

TEST_F(Submit, GoldenPbsScripts) {
  std::string sweep = kGpuSweep;
  sweep.replace(sweep.find("gpu: [a100]"), 11, "gpu: [v100]");
  Campaign c = make_campaign(sweep, kSource + "/configs/sites/example-pbs.yaml");
  auto groups = group_by_shape(c, {});
  ASSERT_EQ(groups.size(), 2u);
  c.dir = "/scratch/campaigns/golden";
  expect_golden("pbs_gpu.pbs", render_job_script(c, "pbs", groups[1].shape, "ts-golden-s1",
                                                 "/scratch/campaigns/golden/jobs/s1.idx", groups[1].indices.size(), 8));
  // One run: a plain job (PBS Pro arrays need at least two subjobs) that runs task 0.
  expect_golden("pbs_single.pbs", render_job_script(c, "pbs", groups[0].shape, "ts-golden-s0",
                                                    "/scratch/campaigns/golden/jobs/s0.idx", 1, 0));
}

// The scheduler directives of a script: its lines that start with `prefix` ("#SBATCH", "#PBS").
std::vector<std::string> directives_of(const std::string& script, const std::string& prefix) {
  std::vector<std::string> out;
  std::istringstream in(script);
  for (std::string line; std::getline(in, line);)
    if (line.rfind(prefix, 0) == 0) out.push_back(line);
  return out;
}

bool contains(const std::string& text, const std::string& part) { return text.find(part) != std::string::npos; }

// gpu: [v100, a100] x workers [1, 6]: one array per generation and worker count, each with its
// generation's partition, GRES, constraint, modules and binary; one worker per GPU, 4 per node.
const char* kGenerationSweep =
    "campaign: gens\n"
    "base: base_cuda.yaml\n"
    "matrix:\n"
    "  gpu: [v100, a100]\n"
    "  workers: [1, 6]\n"
    "  precision: [fp32, fp16]\n"
    "resources: {walltime: \"00:30:00\", cpus_per_worker: 8}\n";

TEST_F(Submit, EachGpuGenerationIsItsOwnSlurmArray) {
  Campaign c = make_campaign(kGenerationSweep, kSource + "/configs/sites/gpu_cluster_example.yaml");
  ASSERT_EQ(c.runs.size(), 8u);  // v100 w1 (0, 1), v100 w6 (2, 3), a100 w1 (4, 5), a100 w6 (6, 7)
  auto groups = group_by_shape(c, {});
  ASSERT_EQ(groups.size(), 4u);
  EXPECT_EQ(groups[0].shape.label(), "workers=1 nodes=1 cpus=8 threads=1 gpus=1 gpu=v100 partition=gpu walltime=00:30:00 mpi=openmpi");
  EXPECT_EQ(groups[1].shape.label(), "workers=6 nodes=2 cpus=8 threads=1 gpus=4 gpu=v100 partition=gpu walltime=00:30:00 mpi=openmpi");
  EXPECT_EQ(groups[2].shape.label(), "workers=1 nodes=1 cpus=8 threads=1 gpus=1 gpu=a100 partition=gpu walltime=00:30:00 mpi=openmpi");
  EXPECT_EQ(groups[3].shape.label(), "workers=6 nodes=2 cpus=8 threads=1 gpus=4 gpu=a100 partition=gpu walltime=00:30:00 mpi=openmpi");
  for (size_t g = 0; g < 4; ++g) EXPECT_EQ(groups[g].indices, (std::vector<int64_t>{int64_t(2 * g), int64_t(2 * g + 1)}));

  c.dir = (dir / "campaign").string();
  const auto scripts = write_job_scripts(c, "slurm", groups, 8, "");
  ASSERT_EQ(scripts.size(), 4u);
  const std::string logs = fs::absolute(dir / "campaign" / "logs").lexically_normal().string();
  auto expected = [&](const std::string& job, int nodes, int tasks, int per_node, const std::vector<std::string>& gpu_lines) {
    std::vector<std::string> d = {"#SBATCH --job-name=" + job,
                                  "#SBATCH --array=0-1%8",
                                  "#SBATCH --nodes=" + std::to_string(nodes),
                                  "#SBATCH --ntasks=" + std::to_string(tasks),
                                  "#SBATCH --ntasks-per-node=" + std::to_string(per_node),
                                  "#SBATCH --cpus-per-task=8",
                                  "#SBATCH --time=00:30:00",
                                  "#SBATCH --output=" + logs + "/%x_%A_%a.out",
                                  "#SBATCH --partition=gpu",
                                  "#SBATCH --account=proj123"};
    d.insert(d.end(), gpu_lines.begin(), gpu_lines.end());
    d.push_back("#SBATCH --no-requeue");  // the site does not requeue: a lost node fails the task
    return d;
  };
  const std::vector<std::string> text = {read(scripts[0].script), read(scripts[1].script), read(scripts[2].script),
                                         read(scripts[3].script)};
  EXPECT_EQ(directives_of(text[0], "#SBATCH"), expected("ts-gens-s0", 1, 1, 1, {"#SBATCH --gres=gpu:v100:1"}));
  // 6 workers on 4-GPU nodes: 2 nodes, at most 4 ranks and 4 GPUs on each.
  EXPECT_EQ(directives_of(text[1], "#SBATCH"), expected("ts-gens-s1", 2, 6, 4, {"#SBATCH --gres=gpu:v100:4"}));
  EXPECT_EQ(directives_of(text[2], "#SBATCH"),
            expected("ts-gens-s2", 1, 1, 1, {"#SBATCH --gres=gpu:a100:1", "#SBATCH --constraint=a100_80g"}));
  EXPECT_EQ(directives_of(text[3], "#SBATCH"),
            expected("ts-gens-s3", 2, 6, 4, {"#SBATCH --gres=gpu:a100:4", "#SBATCH --constraint=a100_80g"}));
  // The V100 arrays load the older toolkit and run the build made with it; the A100 ones do not.
  EXPECT_TRUE(contains(text[1], "module load cuda/12.4\n"));
  EXPECT_TRUE(contains(text[1], "srun --mpi=pmix -n 6 /opt/trainscale/cuda12-sm60-70/bin/trainscale run --manifest"));
  EXPECT_FALSE(contains(text[3], "cuda/12.4"));
  EXPECT_TRUE(contains(text[3], "srun --mpi=pmix -n 6 /opt/trainscale/cuda13/bin/trainscale run --manifest"));
  EXPECT_EQ(read(scripts[0].index_file), "0\n1\n");
  EXPECT_EQ(read(scripts[3].index_file), "6\n7\n");
  EXPECT_EQ(scripts[3].shape, groups[3].shape.label());
}

// Two generations whose requests differ only in the node feature still get two arrays.
TEST_F(Submit, GenerationsThatDifferOnlyByConstraintAreNotMerged) {
  std::ofstream(dir / "site.yaml") << "scheduler: slurm\n"
                                      "gpu:\n"
                                      "  h100: {partition: hopper, gres: \"gpu:{gpus_per_node}\", constraint: h100, gpus_per_node: 4}\n"
                                      "  h200: {partition: hopper, gres: \"gpu:{gpus_per_node}\", constraint: h200, gpus_per_node: 4}\n"
                                      "mpi:\n  openmpi: {launcher: srun}\n"
                                      "storage:\n  local: {}\n";
  Campaign c = make_campaign("base: base_cuda.yaml\nmatrix: {gpu: [h100, h200], workers: [4]}\n", (dir / "site.yaml").string());
  auto groups = group_by_shape(c, {});
  ASSERT_EQ(groups.size(), 2u);
  EXPECT_EQ(groups[0].shape.constraint, "h100");
  EXPECT_EQ(groups[1].shape.constraint, "h200");
  EXPECT_EQ(groups[0].shape.gres, "gpu:4");
  EXPECT_EQ(groups[0].indices, (std::vector<int64_t>{0}));
  EXPECT_EQ(groups[1].indices, (std::vector<int64_t>{1}));
  // The same shape without its generation would have merged them.
  JobShape a = groups[0].shape, b = groups[1].shape;
  a.gpu = b.gpu = "";
  EXPECT_EQ(a.label(), b.label());
  EXPECT_FALSE(a == b);  // ... and still does not: the constraint differs
}

TEST_F(Submit, EachGpuGenerationIsItsOwnPbsArray) {
  Campaign c = make_campaign(kGenerationSweep, kSource + "/configs/sites/gpu_cluster_example_pbs.yaml");
  auto groups = group_by_shape(c, {});
  ASSERT_EQ(groups.size(), 4u);
  c.dir = (dir / "campaign").string();
  const auto scripts = write_job_scripts(c, "pbs", groups, 8, "");
  ASSERT_EQ(scripts.size(), 4u);
  const std::string logs = fs::absolute(dir / "campaign" / "logs").lexically_normal().string();
  auto expected = [&](const std::string& job, const std::string& select) {
    return std::vector<std::string>{"#PBS -N " + job, "#PBS -J 0-1", "#PBS -W max_run_subjobs=8", "#PBS -l select=" + select,
                                    "#PBS -l walltime=00:30:00", "#PBS -j oe", "#PBS -o " + logs + "/", "#PBS -q gpuq",
                                    "#PBS -A PRJ-0042"};
  };
  // select=<nodes>:ncpus=<ranks per node x cpus>:mpiprocs=<ranks per node>:ngpus=<GPUs per node>:gpu_model=<generation>
  EXPECT_EQ(directives_of(read(scripts[0].script), "#PBS"),
            expected("ts-gens-s0", "1:ncpus=8:mpiprocs=1:ngpus=1:gpu_model=v100"));
  EXPECT_EQ(directives_of(read(scripts[1].script), "#PBS"),
            expected("ts-gens-s1", "2:ncpus=32:mpiprocs=4:ngpus=4:gpu_model=v100"));
  EXPECT_EQ(directives_of(read(scripts[2].script), "#PBS"),
            expected("ts-gens-s2", "1:ncpus=8:mpiprocs=1:ngpus=1:gpu_model=a100"));
  EXPECT_EQ(directives_of(read(scripts[3].script), "#PBS"),
            expected("ts-gens-s3", "2:ncpus=32:mpiprocs=4:ngpus=4:gpu_model=a100"));
  EXPECT_TRUE(contains(read(scripts[1].script), "mpirun -np 6 /apps/trainscale/cuda12-sm70/bin/trainscale run"));
  EXPECT_TRUE(contains(read(scripts[3].script), "mpirun -np 6 /apps/trainscale/cuda13/bin/trainscale run"));
}

TEST_F(Submit, RunsMissingFromTheSiteAreRefused) {
  Campaign c = make_campaign("base: base.yaml\nmatrix: {lr: [0.01, 0.02]}\n", kSource + "/configs/sites/local.yaml");
  c.site.storage.clear();  // as if the site had no `local` storage
  try {
    group_by_shape(c, {});
    FAIL() << "a run with a storage the site lacks was grouped";
  } catch (const ConfigError& e) {
    EXPECT_NE(std::string(e.what()).find("dataset.storage"), std::string::npos) << e.what();
  }
}

// A complete run file as metrics/run_file_check.h sees it: the schema and every summary key
// (tests/python/test_campaign_state.py uses real run files of real runs).
void write_complete_run_file(const std::string& path, const ManifestRun& run) {
  h5::File f = h5::File::create(path);
  f.set_attr("schema", "trainscale-run/1");
  f.set_attr("run_id", run.run_id);
  f.set_attr("config_id", run.config_id);
  {
    h5::Group summary = f.create_group("summary");
    for (const auto& key : run_file_summary_keys()) summary.set_attr(key, 1.0);
  }
  f.close();
}

// A run file copied over another run's name (cp runs/A-r0.h5 runs/B-r0.h5) proves it is not B's
// result by its root ids (issue 35): B is failed saying whose file it is, and the task runner's
// claim moves it aside and runs B again.
TEST_F(Submit, ARunFileCopiedOverAnotherRunsNameIsNotItsResult) {
  Campaign c = make_campaign("base: base.yaml\nmatrix: {lr: [0.01, 0.02]}\n", "");
  auto files = [&](int i) { return run_files(c.dir, c.runs[i].run_id); };
  fs::create_directories(dir / "campaign" / "runs");
  write_complete_run_file(files(0).run_file, c.runs[0]);
  fs::copy_file(files(0).run_file, files(1).run_file);
  for (int i : {0, 1}) std::ofstream(files(i).done) << "status: ok\n";
  EXPECT_TRUE(check_done(files(0), c.runs[0]).valid());
  EXPECT_FALSE(check_done(files(0), c.runs[1]).valid());  // A's file is not B's result under any name
  const CampaignStatus st = campaign_status(c, {});
  EXPECT_EQ(st.done, 1);
  EXPECT_EQ(st.runs[1].state, RunState::failed);
  EXPECT_EQ(st.runs[1].reason, "run file of another run behind DONE (runs/" + c.runs[1].run_id + ".h5 holds run_id '" +
                                   c.runs[0].run_id + "', config_id '" + c.runs[0].config_id + "'; this run is '" +
                                   c.runs[1].run_id + "', config_id '" + c.runs[1].config_id +
                                   "': a file copied or moved over this run's name is not its result)");
  const TaskClaim claim = claim_task(c.dir, c.runs[1]);
  EXPECT_EQ(claim.verdict, TaskClaim::Verdict::run);
  EXPECT_NE(claim.note.find("stale DONE removed: run file of another run"), std::string::npos) << claim.note;
  EXPECT_TRUE(fs::exists(files(1).run_file + ".invalid"));
  EXPECT_FALSE(fs::exists(files(1).done));
  EXPECT_EQ(claim_task(c.dir, c.runs[0]).verdict, TaskClaim::Verdict::done);
}

// A RUNNING marker whose pid the kernel has since given to another process is stale (issue 35):
// a live process of another start time, or (a marker without pid_start) one that is no trainscale
// (init: pid 1; this test binary), is no attempt; the marker's own process is one.
TEST_F(Submit, ARunningMarkerOfAReusedPidIsStale) {
  const long self = ::getpid();
  const std::optional<long long> started = process_start_ticks(self);
  ASSERT_TRUE(started.has_value());
  EXPECT_EQ(process_start_ticks(self), started);
  EXPECT_FALSE(process_start_ticks(999999999).has_value());
  RunMarker running;
  running.host = host_name();
  running.pid = self;
  running.pid_start = *started;
  EXPECT_TRUE(attempt_alive(running));
  EXPECT_EQ(parse_marker(marker_text(running)).pid_start, *started);
  running.pid_start = *started + 1;  // the pid of an attempt that ended, now this process's
  EXPECT_FALSE(attempt_alive(running));
  running.pid_start = 0;  // no pid_start: only a trainscale process counts
  EXPECT_FALSE(attempt_alive(running));
  running.pid = 1;
  EXPECT_FALSE(attempt_alive(running));

  Campaign c = make_campaign("base: base.yaml\nmatrix: {lr: [0.01, 0.02]}\n", "");
  fs::create_directories(dir / "campaign" / "runs");
  std::ofstream(run_files(c.dir, c.runs[0].run_id).running) << "host: " << host_name() << "\npid: 1\nattempt: 1\n";
  running.pid = self;
  running.pid_start = *started;
  running.attempt = 1;
  write_marker(run_files(c.dir, c.runs[1].run_id).running, running);
  const CampaignStatus st = campaign_status(c, {});
  EXPECT_EQ(st.runs[0].state, RunState::failed);
  EXPECT_NE(st.runs[0].reason.find("(pid 1) ended without a result (killed?; its pid is now another process's)"),
            std::string::npos)
      << st.runs[0].reason;
  EXPECT_EQ(st.runs[1].state, RunState::running);
}

// A run file deleted behind its DONE marker: the run is missing, as the analysis says (issue 35;
// it was failed here and missing there), with the reason in the text form; the claim removes the
// stale marker and runs it.
TEST_F(Submit, ARunFileDeletedBehindDoneIsMissing) {
  Campaign c = make_campaign("base: base.yaml\nmatrix: {lr: [0.01, 0.02]}\n", "");
  fs::create_directories(dir / "campaign" / "runs");
  const RunFiles f = run_files(c.dir, c.runs[1].run_id);
  std::ofstream(f.done) << "status: ok\n";
  const CampaignStatus st = campaign_status(c, {});
  EXPECT_EQ(st.runs[1].state, RunState::missing);
  EXPECT_EQ(st.runs[1].reason, "run file missing behind DONE (runs/" + c.runs[1].run_id + ".h5)");
  EXPECT_EQ(st.missing, 2);
  EXPECT_EQ(st.failed, 0);
  EXPECT_NE(status_text(c, st).find("  missing 1  " + c.runs[1].run_id + ": run file missing behind DONE"), std::string::npos)
      << status_text(c, st);
  const TaskClaim claim = claim_task(c.dir, c.runs[1]);
  EXPECT_EQ(claim.verdict, TaskClaim::Verdict::run);
  EXPECT_FALSE(fs::exists(f.done));
}

TEST_F(Submit, RunStatesFromMarkersAndTheScheduler) {
  Campaign c = make_campaign("base: base.yaml\nmatrix: {lr: [0.01, 0.02, 0.03, 0.04, 0.05, 0.06, 0.07, 0.08, 0.09, 0.1]}\n", "");
  auto files = [&](int i) { return run_files(c.dir, c.runs[i].run_id); };
  fs::create_directories(dir / "campaign" / "runs");
  write_complete_run_file(files(0).run_file, c.runs[0]);
  write_complete_run_file(files(1).run_file, c.runs[1]);
  std::ofstream(files(0).done) << "status: ok\n";
  std::ofstream(files(1).done) << "status: diverged\n";
  RunMarker failed;  // the one marker format (core/run_marker.h)
  failed.reason = "out of memory \"conv1\"";
  failed.attempt = 2;
  failed.log = "logs/x.attempt2.log";
  write_marker(files(2).failed, failed);
  std::ofstream(files(3).running) << "host: " << host_name() << "\npid: " << ::getpid() << "\npid_start: " << *process_start_ticks(::getpid())
                               << "\nattempt: 1\n";
  std::ofstream(files(4).running) << "host: " << host_name() << "\npid: 999999999\nattempt: 2\n";  // dead process
  // 5: the scheduler says pending (and a stale FAILED from an earlier attempt does not count)
  std::ofstream(files(5).failed) << "earlier attempt\n";  // plain text, as markers once were
  // 6: nothing -> missing
  // 7: queued by a live local executor and started: its live RUNNING marker wins over pending
  std::ofstream(files(7).running) << "host: " << host_name() << "\npid: " << ::getpid() << "\npid_start: " << *process_start_ticks(::getpid())
                               << "\nattempt: 1\n";
  // 8: a DONE marker in front of garbage is no result: failed, saying so
  std::ofstream(files(8).run_file) << "not an HDF5 file";
  std::ofstream(files(8).done) << "status: ok\n";
  // 9: preempted by a signal after a checkpoint (its RUNNING marker left by the dead process)
  RunMarker preempted;
  preempted.reason = "SIGTERM at step 40; checkpoint at step 40";
  preempted.attempt = 1;
  write_marker(files(9).preempted, preempted);
  std::ofstream(files(9).running) << "host: " << host_name() << "\npid: 999999999\nattempt: 1\n";
  CampaignStatus st = campaign_status(c, {{5, {"pending", "JobHeldUser", {}}}, {7, {"pending", "", {}}}});
  EXPECT_EQ(st.total, 10);
  EXPECT_EQ(st.done, 1);
  EXPECT_EQ(st.diverged, 1);
  EXPECT_EQ(st.failed, 3);
  EXPECT_EQ(st.preempted, 1);
  EXPECT_EQ(st.running, 2);
  EXPECT_EQ(st.pending, 1);
  EXPECT_EQ(st.runs[7].state, RunState::running);
  EXPECT_EQ(st.missing, 1);
  EXPECT_EQ(st.runs[2].reason, "out of memory \"conv1\" [attempt 2, log: logs/x.attempt2.log]");
  EXPECT_NE(st.runs[4].reason.find("ended without a result"), std::string::npos) << st.runs[4].reason;
  EXPECT_EQ(st.runs[5].reason, "JobHeldUser");
  EXPECT_EQ(st.runs[8].state, RunState::failed);
  EXPECT_NE(st.runs[8].reason.find("run file unreadable behind DONE (runs/" + c.runs[8].run_id + ".h5"), std::string::npos)
      << st.runs[8].reason;
  EXPECT_EQ(st.runs[9].state, RunState::preempted);
  EXPECT_EQ(st.runs[9].reason, "SIGTERM at step 40; checkpoint at step 40 [attempt 1]");
  const std::string json = status_json(st);
  auto entry = [&](int i) {
    return "{\"index\": " + std::to_string(i) + ", \"run_id\": \"" + c.runs[i].run_id + "\", \"reason\": \"" + st.runs[i].reason + "\"}";
  };
  EXPECT_EQ(json, "{\"total\": 10, \"done\": 1, \"diverged\": 1, \"failed\": [{\"index\": 2, \"run_id\": \"" + c.runs[2].run_id +
                      "\", \"reason\": \"out of memory \\\"conv1\\\" [attempt 2, log: logs/x.attempt2.log]\"}, " + entry(4) + ", " + entry(8) +
                      "], \"preempted\": [" + entry(9) + "], \"running\": 2, \"pending\": 1, \"pending_reasons\": [" + entry(5) +
                      "], \"missing\": 1, \"unsupported\": []}\n");
  const std::string text = status_text(c, st);
  EXPECT_NE(text.find("done 1, diverged 1, failed 3, preempted 1, running 2, pending 1, missing 1"), std::string::npos) << text;
  EXPECT_NE(text.find("  pending 1 (JobHeldUser): indices 5\n"), std::string::npos) << text;
  EXPECT_NE(text.find("  preempted 9  " + c.runs[9].run_id + ": SIGTERM at step 40"), std::string::npos) << text;

  // A later FAILED attempt wins over an earlier PREEMPTED one.
  RunMarker later;
  later.reason = "resumed attempt failed";
  std::ofstream(files(9).failed) << "";
  fs::last_write_time(files(9).preempted, fs::file_time_type::clock::now() - std::chrono::seconds(10));
  write_marker(files(9).failed, later);
  fs::remove(files(9).running);
  EXPECT_EQ(campaign_status(c, {}).runs[9].state, RunState::failed);

  // A RUNNING marker of another host: running while the scheduler runs the job or says nothing;
  // pending while it holds the task queued (requeued); failed once it lists the job no more.
  fs::remove(files(6).failed);
  std::ofstream(files(6).running) << "host: node-that-died\npid: 4242\nattempt: 3\n";
  EXPECT_EQ(campaign_status(c, {}).runs[6].state, RunState::running);
  EXPECT_EQ(campaign_status(c, {{6, {"pending", "BeginTime", {}}}}).runs[6].state, RunState::pending);
  const RunStatus lost = campaign_status(c, {{6, {"ended", "", {}}}}).runs[6];
  EXPECT_EQ(lost.state, RunState::failed);
  EXPECT_NE(lost.reason.find("attempt 3 on node-that-died ended without a result: its job is no longer in the scheduler's queue"),
            std::string::npos) << lost.reason;
}

TEST_F(Submit, SubmissionsAreRecorded) {
  Campaign c = make_campaign("base: base.yaml\nmatrix: {lr: [0.01, 0.02]}\n", "");
  EXPECT_TRUE(read_submissions(c.dir).empty());
  EXPECT_EQ(next_resubmit_tag(c.dir), "resubmit1-");
  SubmissionRecord a;
  a.scheduler = "slurm";
  a.job_id = "1234";
  a.script = c.dir + "/jobs/s0.slurm";
  a.index_file = c.dir + "/jobs/s0.idx";
  a.count = 2;
  record_submissions(c.dir, {a});
  a.job_id = "1240";
  a.script = c.dir + "/jobs/resubmit1-s0.slurm";
  record_submissions(c.dir, {a});
  std::ofstream(c.dir + "/jobs/resubmit1-s0.slurm") << "#!/bin/bash\n";
  auto subs = read_submissions(c.dir);
  ASSERT_EQ(subs.size(), 2u);
  EXPECT_EQ(subs[0].job_id, "1234");
  EXPECT_EQ(subs[1].job_id, "1240");
  EXPECT_EQ(subs[1].count, 2);
  EXPECT_EQ(next_resubmit_tag(c.dir), "resubmit2-");
}

// Packing (sweep submit --pack K): K manifest indices to an array task, in order, the last task
// holding the rest; index files hold one task per line and read back the same.
TEST(Packing, IndicesGoKToATaskInOrder) {
  const std::vector<int64_t> seven = {0, 1, 2, 3, 4, 5, 6};
  using Tasks = std::vector<std::vector<int64_t>>;
  EXPECT_EQ(pack_indices(seven, 3), (Tasks{{0, 1, 2}, {3, 4, 5}, {6}}));
  EXPECT_EQ(pack_indices(seven, 1), (Tasks{{0}, {1}, {2}, {3}, {4}, {5}, {6}}));
  EXPECT_EQ(pack_indices(seven, 7), (Tasks{{0, 1, 2, 3, 4, 5, 6}}));
  EXPECT_EQ(pack_indices(seven, 100), (Tasks{{0, 1, 2, 3, 4, 5, 6}}));
  EXPECT_EQ(pack_indices({9, 4, 7, 2}, 2), (Tasks{{9, 4}, {7, 2}}));  // the given order, not sorted
  EXPECT_TRUE(pack_indices({}, 3).empty());
  EXPECT_THROW(pack_indices(seven, 0), ConfigError);
  EXPECT_THROW(pack_indices(seven, kMaxPack + 1), ConfigError);
  EXPECT_EQ(index_file_text(pack_indices(seven, 3)), "0 1 2\n3 4 5\n6\n");
  EXPECT_EQ(index_file_text(pack_indices({5, 8}, 1)), "5\n8\n");  // unpacked: the format of before
}

TEST_F(Submit, IndexFilesReadBackAndRefuseWhatIsNoIndex) {
  std::ofstream(dir / "a.idx") << "0 1 2\n3 4 5\n\n6\n";
  EXPECT_EQ(read_index_file((dir / "a.idx").string()), (std::vector<std::vector<int64_t>>{{0, 1, 2}, {3, 4, 5}, {6}}));
  EXPECT_TRUE(read_index_file((dir / "none.idx").string()).empty());
  std::ofstream(dir / "b.idx") << "0 1\n2 x\n";
  try {
    read_index_file((dir / "b.idx").string());
    FAIL() << "an index file with a word in it was read";
  } catch (const ConfigError& e) {
    EXPECT_NE(std::string(e.what()).find("b.idx:2: 'x' is not a manifest index"), std::string::npos) << e.what();
  }
}

TEST(Packing, WalltimeOfAPackedTask) {
  EXPECT_EQ(scaled_walltime("00:10:00", 1), "00:10:00");
  EXPECT_EQ(scaled_walltime("00:10:00", 3), "00:30:00");
  EXPECT_EQ(scaled_walltime("00:00:50", 3), "00:02:30");
  EXPECT_EQ(scaled_walltime("10:00:00", 3), "1-06:00:00");  // a day or more: D-HH:MM:SS
  EXPECT_EQ(scaled_walltime("1-12:00:00", 2), "3-00:00:00");
  EXPECT_EQ(scaled_walltime("30:00:00", 1), "1-06:00:00");
  EXPECT_EQ(walltime_problem(scaled_walltime("23:59:59", 1000)), "");
  EXPECT_EQ(pbs_walltime(scaled_walltime("10:00:00", 3)), "30:00:00");
  EXPECT_THROW(scaled_walltime("500-00:00:00", 3), ConfigError);  // beyond 999 days
}

TEST_F(Submit, PackedScriptsRunKRunsPerArrayTask) {
  Campaign c = make_campaign("base: base.yaml\nmatrix: {lr: [0.01, 0.02, 0.03, 0.04, 0.05, 0.06, 0.07]}\n"
                             "resources: {walltime: \"00:10:00\"}\n",
                             kSource + "/configs/sites/localhost-slurm.yaml");
  const auto groups = group_by_shape(c, {});
  ASSERT_EQ(groups.size(), 1u);
  auto scripts = write_job_scripts(c, "slurm", groups, 2, "", 3);
  ASSERT_EQ(scripts.size(), 1u);
  EXPECT_EQ(scripts[0].count, 3);  // array tasks
  EXPECT_EQ(scripts[0].runs, 7);
  EXPECT_EQ(scripts[0].pack, 3);
  EXPECT_EQ(read(scripts[0].index_file), "0 1 2\n3 4 5\n6\n");
  const std::string text = read(scripts[0].script);
  EXPECT_TRUE(contains(text, "#SBATCH --array=0-2%2\n")) << text;  // the throttle counts tasks
  EXPECT_TRUE(contains(text, "#SBATCH --time=00:30:00\n")) << text;  // 3 x the runs' walltime
  EXPECT_TRUE(contains(text, "3 array tasks of up to 3 runs each, one after another (walltime 3 x 00:10:00)")) << text;
  EXPECT_TRUE(contains(text, "  for INDEX in $1; do\n")) << text;  // each lane's runs (one lane here)
  EXPECT_TRUE(contains(text, "sweep record-end \"$CAMPAIGN\" --index \"$INDEX\" --not-started")) << text;

  // The site's max array size counts array tasks: 3 tasks in arrays of at most 2.
  c.site.max_array_size = 2;
  scripts = write_job_scripts(c, "pbs", groups, 0, "", 3);
  ASSERT_EQ(scripts.size(), 2u);
  EXPECT_EQ(read(scripts[0].index_file), "0 1 2\n3 4 5\n");
  EXPECT_EQ(read(scripts[1].index_file), "6\n");
  EXPECT_EQ((std::vector<int64_t>{scripts[0].runs, scripts[1].runs}), (std::vector<int64_t>{6, 1}));
  EXPECT_TRUE(contains(read(scripts[0].script), "#PBS -J 0-1\n"));
  EXPECT_TRUE(contains(read(scripts[0].script), "#PBS -l walltime=00:30:00\n"));
  // One task left: a plain PBS job that runs task 0.
  EXPECT_TRUE(contains(read(scripts[1].script), "# one array task: a plain job")) << read(scripts[1].script);
  EXPECT_THROW(write_job_scripts(c, "slurm", groups, 0, "", 0), ConfigError);
}

// pack_side_by_side: a packed task of a one-node CPU shape runs as many runs at once as a node's
// cores hold, in lanes (docs/sweeps.md "Packed allocations"); other shapes one after another.
TEST_F(Submit, PackedRunsGoSideBySideAsANodeHoldsThem) {
  std::ofstream(dir / "site.yaml") << "scheduler: slurm\nnode: {cores: 2}\npack_side_by_side: true\n"
                                      "mpi:\n  openmpi: {launcher: srun, srun_mpi: pmix}\nstorage:\n  local: {}\n";
  Campaign c = make_campaign("base: base.yaml\nmatrix: {lr: [0.01, 0.02, 0.03, 0.04, 0.05]}\n"
                             "resources: {walltime: \"00:10:00\"}\n", (dir / "site.yaml").string());
  const auto groups = group_by_shape(c, {});
  ASSERT_EQ(groups.size(), 1u);
  EXPECT_EQ(pack_layout(c.site, groups[0].shape, 4).width, 2);  // 2 cores / (1 worker x 1 CPU)
  EXPECT_EQ(pack_layout(c.site, groups[0].shape, 1).width, 1);
  auto scripts = write_job_scripts(c, "slurm", groups, 0, "", 4);
  ASSERT_EQ(scripts.size(), 1u);
  EXPECT_EQ(scripts[0].width, 2);
  EXPECT_EQ(read(scripts[0].index_file), "0 2 | 1 3\n4\n");  // lane j: runs j, j + 2
  EXPECT_EQ(read_index_lanes(scripts[0].index_file),
            (std::vector<std::vector<std::vector<int64_t>>>{{{0, 2}, {1, 3}}, {{4}}}));
  EXPECT_EQ(read_index_file(scripts[0].index_file), (std::vector<std::vector<int64_t>>{{0, 2, 1, 3}, {4}}));
  std::string text = read(scripts[0].script);
  for (const char* line : {"#SBATCH --nodes=1\n", "#SBATCH --ntasks=2\n", "#SBATCH --ntasks-per-node=2\n",
                           "#SBATCH --cpus-per-task=1\n", "#SBATCH --time=00:20:00\n",  // 2 rounds of 2
                           "2 array tasks of up to 4 runs each, 2 side by side (walltime 2 x 00:10:00)",
                           "srun --exclusive --nodes=1 --cpus-per-task=1 --mpi=pmix -n 1 "})
    EXPECT_TRUE(contains(text, line)) << line << "\n" << text;
  // PBS: one chunk of the node with both runs' CPUs and ranks.
  text = read(write_job_scripts(c, "pbs", groups, 0, "", 4)[0].script);
  EXPECT_TRUE(contains(text, "#PBS -l select=1:ncpus=2:mpiprocs=2\n")) << text;
  EXPECT_TRUE(contains(text, "#PBS -l walltime=00:20:00\n")) << text;
  EXPECT_TRUE(contains(text, "IFS='|' read -r -a LANES <<< \"$INDICES\"")) << text;
  EXPECT_TRUE(contains(text, "    run_lane \"${LANES[$j]}\" \"${HOSTS[$((j / 2))]:-}\" &\n")) << text;
  // What a node cannot hold twice, or what the rule leaves out, runs one after another.
  JobShape shape = groups[0].shape;
  shape.cpus_per_task = 2;
  EXPECT_EQ(pack_layout(c.site, shape, 4).width, 1);
  shape = groups[0].shape;
  shape.nodes = 2;
  EXPECT_EQ(pack_layout(c.site, shape, 4).width, 1);
  shape = groups[0].shape;
  shape.gpus_per_node = 1;
  EXPECT_EQ(pack_layout(c.site, shape, 4).width, 1);
  shape = groups[0].shape;
  shape.mem = "4G";
  EXPECT_EQ(pack_layout(c.site, shape, 4).width, 1);
  Site site = c.site;
  site.node.oversubscribe = true;
  EXPECT_EQ(pack_layout(site, groups[0].shape, 4).width, 1);
  site = c.site;
  site.pack_side_by_side = false;  // the default
  EXPECT_EQ(pack_layout(site, groups[0].shape, 4).width, 1);
  site = c.site;
  site.node.cores.reset();  // a node the site does not describe
  EXPECT_EQ(pack_layout(site, groups[0].shape, 4).width, 1);
  EXPECT_THROW(parse_site_file("scheduler: local\npack_side_by_side: true\nmpi: {openmpi: {}}\nstorage: {local: {}}\n",
                               "site.yaml"),
               ConfigError);
  EXPECT_THROW(parse_site_file("scheduler: slurm\npack_nodes: 2\nmpi: {openmpi: {}}\nstorage: {local: {}}\n", "site.yaml"),
               ConfigError);  // nodes for side by side without side by side
}

// pack_nodes: side-by-side runs spread over that many nodes, a node's worth on each; Slurm places
// each run's srun step, under PBS (and mpirun in Slurm) each lane takes its node from the
// scheduler's host list.
TEST_F(Submit, PackedRunsSideBySideSpreadOverNodes) {
  std::ofstream(dir / "site.yaml") << "scheduler: pbs\nnode: {cores: 2}\npack_side_by_side: true\npack_nodes: 3\n"
                                      "mpi:\n  openmpi: {launcher: mpirun}\nstorage:\n  local: {}\n";
  Campaign c = make_campaign("base: base.yaml\nmatrix: {lr: [0.01, 0.02, 0.03, 0.04, 0.05]}\n"
                             "resources: {walltime: \"00:10:00\"}\n", (dir / "site.yaml").string());
  const auto groups = group_by_shape(c, {});
  const PackLayout four = pack_layout(c.site, groups[0].shape, 4);
  EXPECT_EQ((std::vector<int>{four.width, four.per_node, four.nodes}), (std::vector<int>{4, 2, 2}));
  const PackLayout all = pack_layout(c.site, groups[0].shape, 10);  // 3 nodes of 2
  EXPECT_EQ((std::vector<int>{all.width, all.per_node, all.nodes}), (std::vector<int>{6, 2, 3}));
  const auto scripts = write_job_scripts(c, "pbs", groups, 0, "", 4);
  EXPECT_EQ(read(scripts[0].index_file), "0 | 1 | 2 | 3\n4\n");
  std::string text = read(scripts[0].script);
  for (const char* line : {"#PBS -l select=2:ncpus=2:mpiprocs=2\n", "#PBS -l walltime=00:10:00\n",
                           "mpirun --host \"${LANE_HOST}:1\" -np 1 ", "lane j runs on node j / 2.\n",
                           "run_lane \"${LANES[$j]}\" \"${HOSTS[$((j / 2))]:-}\" &\n"})
    EXPECT_TRUE(contains(text, line)) << line << "\n" << text;
  text = read(write_job_scripts(c, "slurm", groups, 0, "", 4)[0].script);
  for (const char* line : {"#SBATCH --nodes=2\n", "#SBATCH --ntasks=4\n", "#SBATCH --ntasks-per-node=2\n",
                           "scontrol show hostnames", "mpirun --host \"${LANE_HOST}:1\" -np 1 "})
    EXPECT_TRUE(contains(text, line)) << line << "\n" << text;
}

// Status of a packed task whose runs go side by side: each lane's current run is running, the
// runs after it in its lane wait.
TEST_F(Submit, StatusOfAPackedTaskInLanes) {
  Campaign c = make_campaign("base: base.yaml\nmatrix: {lr: [0.01, 0.02, 0.03, 0.04]}\n", "");
  auto files = [&](int i) { return run_files(c.dir, c.runs[i].run_id); };
  const std::vector<int64_t> pack = {0, 2, 1, 3};
  SchedulerStates running;
  for (const std::vector<int64_t>& lane : {std::vector<int64_t>{0, 2}, std::vector<int64_t>{1, 3}})
    for (int64_t i : lane) running[i] = SchedulerTask{"running", "", pack, 2, lane};
  for (int i : {0, 1})
    std::ofstream(files(i).running) << "host: " << host_name() << "\npid: " << ::getpid()
                                    << "\npid_start: " << *process_start_ticks(::getpid()) << "\nattempt: 1\n";
  CampaignStatus st = campaign_status(c, running);
  EXPECT_EQ((std::vector<int64_t>{st.running, st.pending}), (std::vector<int64_t>{2, 2}));
  EXPECT_EQ(st.runs[1].reason, "scheduler: running, run 3 of 4 of its packed array task");
  EXPECT_EQ(st.runs[3].state, RunState::pending);
  EXPECT_EQ(st.runs[3].reason, "waiting: run 4 of 4 of its packed array task, which runs them 2 side by side");
}

// OMP_NUM_THREADS in a job script is the runs' threads, not a site's value, and runs whose
// threads differ get arrays of their own even when resources.cpus_per_worker gives them the
// same CPUs; the site's defaults.mem applies when the sweep gives none.
TEST_F(Submit, ScriptsExportTheRunsThreads) {
  std::ofstream(dir / "site.yaml") << "scheduler: slurm\ndefaults: {mem: 12G}\n"
                                      "env: {OMP_NUM_THREADS: \"1\", OMP_PROC_BIND: close}\n"
                                      "mpi:\n  openmpi: {launcher: srun}\nstorage:\n  local: {}\n";
  Campaign c = make_campaign("base: base.yaml\nmatrix: {threads: [2, 4]}\nresources: {cpus_per_worker: 4}\n",
                             (dir / "site.yaml").string());
  const auto groups = group_by_shape(c, {});
  ASSERT_EQ(groups.size(), 2u);
  EXPECT_EQ(groups[0].shape.label(), "workers=1 nodes=1 cpus=4 threads=2 gpus=0 partition=- walltime=01:00:00 mem=12G mpi=openmpi");
  EXPECT_EQ(groups[1].shape.label(), "workers=1 nodes=1 cpus=4 gpus=0 partition=- walltime=01:00:00 mem=12G mpi=openmpi");
  const auto scripts = write_job_scripts(c, "slurm", groups, 0, "");
  ASSERT_EQ(scripts.size(), 2u);
  const std::string two = read(scripts[0].script), four = read(scripts[1].script);
  EXPECT_TRUE(contains(two, "\nexport OMP_NUM_THREADS=2\n")) << two;
  EXPECT_TRUE(contains(four, "\nexport OMP_NUM_THREADS=4\n")) << four;
  EXPECT_FALSE(contains(two, "export OMP_NUM_THREADS=1")) << two;
  EXPECT_TRUE(contains(two, "# (the site's OMP_NUM_THREADS=1 is replaced by the run's threads below)")) << two;
  EXPECT_TRUE(contains(two, "export OMP_PROC_BIND=close\n")) << two;
  EXPECT_TRUE(contains(two, "#SBATCH --mem=12G\n")) << two;
}

// A packed task that the scheduler runs runs its runs one after another: the current one is
// running, the later ones wait, the earlier ones have their own outcome.
TEST_F(Submit, StatusOfARunningPackedTask) {
  Campaign c = make_campaign("base: base.yaml\nmatrix: {lr: [0.01, 0.02, 0.03]}\n", "");
  auto files = [&](int i) { return run_files(c.dir, c.runs[i].run_id); };
  const std::vector<int64_t> pack = {0, 1, 2};
  const SchedulerStates running = {{0, {"running", "", pack}}, {1, {"running", "", pack}}, {2, {"running", "", pack}}};
  write_complete_run_file(files(0).run_file, c.runs[0]);
  std::ofstream(files(0).done) << "status: ok\n";
  std::ofstream(files(1).running) << "host: " << host_name() << "\npid: " << ::getpid() << "\npid_start: " << *process_start_ticks(::getpid())
                               << "\nattempt: 1\n";
  CampaignStatus st = campaign_status(c, running);
  EXPECT_EQ(st.runs[0].state, RunState::done);
  EXPECT_EQ(st.runs[1].state, RunState::running);
  EXPECT_EQ(st.runs[1].reason, "scheduler: running, run 2 of 3 of its packed array task");
  EXPECT_EQ(st.runs[2].state, RunState::pending);
  EXPECT_EQ(st.runs[2].reason, "waiting: run 3 of 3 of its packed array task, which runs them one after another");
  // Run 1 failed; between two runs (no RUNNING marker) the next one not yet tried is current.
  fs::remove(files(1).running);
  RunMarker failed;
  failed.reason = "out of memory";
  write_marker(files(1).failed, failed);
  st = campaign_status(c, running);
  EXPECT_EQ(st.runs[1].state, RunState::failed);
  EXPECT_EQ(st.runs[1].reason, "out of memory");
  EXPECT_EQ(st.runs[2].state, RunState::running);
  EXPECT_EQ((std::vector<int64_t>{st.done, st.failed, st.running, st.pending}), (std::vector<int64_t>{1, 1, 1, 0}));
  // A packed task the scheduler holds queued: every run not done waits with its reason.
  st = campaign_status(c, {{1, {"pending", "Priority", pack}}, {2, {"pending", "Priority", pack}}});
  EXPECT_EQ(st.runs[1].state, RunState::pending);
  EXPECT_EQ(st.runs[2].reason, "Priority");
}

// A run a stopped packed task never started ends PREEMPTED (resubmit --preempted takes it); a
// done run is left alone.
TEST_F(Submit, RunsAStoppedPackNeverStartedArePreempted) {
  Campaign c = make_campaign("base: base.yaml\nmatrix: {lr: [0.01, 0.02]}\n", "");
  auto files = [&](int i) { return run_files(c.dir, c.runs[i].run_id); };
  write_complete_run_file(files(0).run_file, c.runs[0]);
  std::ofstream(files(0).done) << "status: ok\n";
  EXPECT_FALSE(record_not_started(c.dir, c.runs[0]).has_value());
  EXPECT_FALSE(fs::exists(files(0).preempted));
  const auto reason = record_not_started(c.dir, c.runs[1]);
  ASSERT_TRUE(reason.has_value());
  EXPECT_NE(reason->find("not started: its packed array task was stopped"), std::string::npos) << *reason;
  const RunStatus st = campaign_status(c, {}).runs[1];
  EXPECT_EQ(st.state, RunState::preempted);
  EXPECT_NE(st.reason.find("not started"), std::string::npos) << st.reason;
  EXPECT_FALSE(record_not_started(c.dir, c.runs[1]).has_value());  // already preempted: kept as it is
}

// A campaign expanded and never submitted: its runs are "not submitted", not "missing".
TEST_F(Submit, RunsNoSubmissionHoldsAreNotSubmitted) {
  Campaign c = make_campaign("base: base.yaml\nmatrix: {lr: [0.01, 0.02, 0.03]}\n", "");
  std::vector<std::string> notes;
  CampaignStatus st = campaign_status(c, query_scheduler(c, &notes));
  EXPECT_EQ((std::vector<int64_t>{st.missing, st.not_submitted}), (std::vector<int64_t>{3, 3}));
  std::string text = status_text(c, st);
  EXPECT_TRUE(contains(text, "pending 0, missing 0, not submitted 3\n")) << text;
  EXPECT_TRUE(contains(text, "  not submitted 3: no submission of this campaign holds them yet; run trainscale sweep submit ")) << text;
  EXPECT_FALSE(contains(text, "missing 3")) << text;
  // Once a submission holds index 1 (a local executor that is gone), only 0 and 2 stay unsubmitted.
  fs::create_directories(c.dir + "/jobs");
  std::ofstream(c.dir + "/jobs/local.idx") << "1\n";
  SubmissionRecord rec;
  rec.scheduler = "local";
  rec.index_file = c.dir + "/jobs/local.idx";
  rec.count = 1;
  record_submissions(c.dir, {rec});
  st = campaign_status(c, query_scheduler(c, &notes));
  EXPECT_EQ((std::vector<int64_t>{st.missing, st.not_submitted}), (std::vector<int64_t>{3, 2}));
  text = status_text(c, st);
  EXPECT_TRUE(contains(text, "missing 1, not submitted 2\n")) << text;
}

// Runs are named by their run id and the values of the keys the sweep varies.
TEST_F(Submit, RunLabelsNameTheSweptValues) {
  Campaign c = make_campaign("base: base.yaml\nmatrix: {workers: [1, 2], lr: [0.01, 0.02]}\n"
                             "include:\n  - {dist.allreduce: ring, workers: 2}\n", "");
  EXPECT_EQ(c.swept_keys, (std::vector<std::string>{"workers", "lr", "dist.allreduce"}));
  EXPECT_EQ(run_label(c, c.runs[1]), c.runs[1].run_id + " (workers=1 lr=0.02 dist.allreduce=mpi)");
  EXPECT_EQ(run_label(c, c.runs[4]), c.runs[4].run_id + " (workers=2 lr=0.05 dist.allreduce=ring)");
  c.swept_keys.clear();  // a campaign without its sweep.yaml copy: the run id alone
  EXPECT_EQ(run_label(c, c.runs[1]), c.runs[1].run_id);
}
