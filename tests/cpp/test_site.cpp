// Site files: the shipped sites parse; malformed sites are ConfigErrors naming file, line, key
// and what is accepted; runs are checked against the site's gpu / mpi / storage names; the
// storage mapping and the stage-in copy.
#include <gtest/gtest.h>

#include <filesystem>
#include <fstream>

#include <unistd.h>

#include "core/error.h"
#include "sweep/site.h"

namespace fs = std::filesystem;
using namespace ts;

namespace {

std::string site_dir() { return std::string(TRAINSCALE_SOURCE_DIR) + "/configs/sites/"; }

std::string error_of(const std::string& text) {
  try {
    parse_site_file(text, "site.yaml");
  } catch (const ConfigError& e) {
    return e.what();
  }
  return "";
}

}  // namespace

TEST(Site, ShippedSitesParse) {
  Site local = load_site_file(site_dir() + "local.yaml");
  EXPECT_EQ(local.scheduler, "local");
  EXPECT_EQ(local.throttle, 1);
  EXPECT_EQ(local.mpi_default, "openmpi");
  EXPECT_EQ(local.mpi.at("openmpi").launcher, "mpirun");
  EXPECT_TRUE(local.mpi.at("openmpi").binary.empty());
  EXPECT_EQ(local.mpi.at("mpich").launcher, "mpiexec");
  EXPECT_EQ(local.mpi.at("mpich").launcher_command, "mpiexec.mpich");
  EXPECT_TRUE(local.storage.count("local"));

  Site slurm = load_site_file(site_dir() + "localhost-slurm.yaml");
  EXPECT_EQ(slurm.scheduler, "slurm");
  EXPECT_EQ(slurm.partition, "debug");
  EXPECT_EQ(slurm.mpi.at("openmpi").launcher, "srun");
  EXPECT_EQ(slurm.mpi.at("openmpi").srun_mpi, "pmix");

  Site gpu = load_site_file(site_dir() + "example-slurm-gpu.yaml");
  EXPECT_EQ(gpu.account, "proj123");
  EXPECT_EQ(gpu.max_array_size, 1000);
  EXPECT_EQ(gpu.throttle, 16);
  EXPECT_EQ(gpu.workers_per_node, 32);
  EXPECT_EQ(gpu.gpu.at("a100").gpus_per_node, 4);
  EXPECT_EQ(gpu.gpu.at("a100").gres, "gpu:a100:{gpus_per_node}");
  EXPECT_EQ(gpu.mpi.at("mpich").srun_mpi, "pmi2");
  EXPECT_EQ(gpu.mpi.at("openmpi").modules.size(), 3u);
  EXPECT_EQ(gpu.storage.at("nvme").stage_from, "lustre");

  Site pbs = load_site_file(site_dir() + "example-pbs.yaml");
  EXPECT_EQ(pbs.scheduler, "pbs");
  EXPECT_EQ(pbs.gpu.at("v100").partition, "gpuq");
}

// The multi-generation examples: one entry per generation, spelled the ways sites do it.
TEST(Site, GpuClusterExamplesMapEveryGeneration) {
  Site slurm = load_site_file(site_dir() + "gpu_cluster_example.yaml");
  EXPECT_EQ(slurm.scheduler, "slurm");
  std::vector<std::string> names;
  for (const auto& [name, entry] : slurm.gpu) names.push_back(name);
  EXPECT_EQ(names, (std::vector<std::string>{"a100", "any", "h100", "h200", "p100", "v100"}));
  EXPECT_EQ(slurm.gpu.at("v100").gres, "gpu:v100:{gpus_per_node}");
  EXPECT_EQ(slurm.gpu.at("v100").modules, (std::vector<std::string>{"cuda/12.4"}));
  EXPECT_EQ(slurm.gpu.at("v100").binary, "/opt/trainscale/cuda12-sm60-70/bin/trainscale");
  EXPECT_EQ(slurm.gpu.at("a100").constraint, "a100_80g");
  EXPECT_EQ(slurm.gpu.at("a100").partition, slurm.gpu.at("v100").partition);  // same partition, other GRES type
  EXPECT_EQ(slurm.gpu.at("h100").gres, "gpu:{gpus_per_node}");                  // untyped GRES + feature
  EXPECT_EQ(slurm.gpu.at("h100").constraint, "h100");
  EXPECT_EQ(slurm.gpu.at("h200").gpus_per_node, 8);
  EXPECT_TRUE(slurm.gpu.at("a100").binary.empty());

  Site pbs = load_site_file(site_dir() + "gpu_cluster_example_pbs.yaml");
  EXPECT_EQ(pbs.scheduler, "pbs");
  EXPECT_EQ(pbs.gpu.at("a100").select, "gpu_model=a100");
  EXPECT_EQ(pbs.gpu.at("v100").select, "gpu_model=v100");
  EXPECT_TRUE(pbs.gpu.at("any").select.empty());
}

TEST(Site, GpuEntriesAreGenerations) {
  std::string e = error_of("scheduler: slurm\ngpu:\n  a10: {gpus_per_node: 4}\n");
  EXPECT_NE(e.find("site.yaml:3: gpu: 'a10' is not a GPU generation (did you mean 'a100'?)"), std::string::npos) << e;
  EXPECT_NE(e.find("accepted: k80 | p40 | p100 | v100 | a100 | h100 | h200 | any"), std::string::npos) << e;
  e = error_of("scheduler: slurm\ngpu:\n  none: {gpus_per_node: 4}\n");
  EXPECT_NE(e.find("gpu: 'none' is not a GPU generation"), std::string::npos) << e;
  e = error_of("scheduler: slurm\ngpu:\n  tesla_v100: {gpus_per_node: 4}\n");
  EXPECT_NE(e.find("the scheduler's own GPU type goes in gres, constraint or select"), std::string::npos) << e;

  // PBS select resources: name=value pairs, not the ones trainscale writes itself.
  EXPECT_EQ(error_of("scheduler: pbs\ngpu:\n  a100: {select: \"gpu_model=a100:gpu_mem=80gb\"}\n"), "");
  e = error_of("scheduler: pbs\ngpu:\n  a100: {select: gpu_model}\n");
  EXPECT_NE(e.find("site.yaml:3: key 'gpu.a100.select': 'gpu_model' is not a list of PBS resources"), std::string::npos) << e;
  e = error_of("scheduler: pbs\ngpu:\n  a100: {select: \"ngpus=4:gpu_model=a100\"}\n");
  EXPECT_NE(e.find("'ngpus' is written by trainscale itself"), std::string::npos) << e;
  e = error_of("scheduler: pbs\ngpu:\n  a100: {select: \":gpu_model=a100\"}\n");
  EXPECT_NE(e.find("is not a list of PBS resources"), std::string::npos) << e;
  e = error_of("scheduler: slurm\ngpu:\n  a100: {modules: {cuda: 12}}\n");
  EXPECT_NE(e.find("gpu.a100.modules"), std::string::npos) << e;
}

TEST(Site, MalformedSitesNameTheProblem) {
  std::string e = error_of("scheduler: slurm\nlimts: {throttle: 2}\n");
  EXPECT_NE(e.find("site.yaml:2"), std::string::npos) << e;
  EXPECT_NE(e.find("did you mean 'limits'"), std::string::npos) << e;

  e = error_of("scheduler: lsf\n");
  EXPECT_NE(e.find("site.yaml:1"), std::string::npos) << e;
  EXPECT_NE(e.find("accepted: slurm | pbs | local"), std::string::npos) << e;

  e = error_of("name: x\n");
  EXPECT_NE(e.find("missing `scheduler`"), std::string::npos) << e;

  e = error_of("scheduler: slurm\nmpi:\n  openmpi: {launcher: aprun}\n");
  EXPECT_NE(e.find("mpi.openmpi.launcher"), std::string::npos) << e;
  EXPECT_NE(e.find("accepted: mpirun | srun | mpiexec"), std::string::npos) << e;

  e = error_of("scheduler: slurm\nmpi:\n  openmpi: {launcher: srun}\nmpi_default: mpich\n");
  EXPECT_NE(e.find("mpi_default"), std::string::npos) << e;
  EXPECT_NE(e.find("openmpi"), std::string::npos) << e;

  e = error_of("scheduler: slurm\nstorage:\n  nvme: {path: /nvme, stage_from: lustre}\n");
  EXPECT_NE(e.find("stage_from"), std::string::npos) << e;
  EXPECT_NE(e.find("'lustre'"), std::string::npos) << e;

  e = error_of("scheduler: slurm\nlimits: {max_array_size: 0}\n");
  EXPECT_NE(e.find("limits.max_array_size"), std::string::npos) << e;

  e = error_of("scheduler: slurm\ngpu:\n  a100: {gpus_per_nod: 4}\n");
  EXPECT_NE(e.find("did you mean 'gpus_per_node'"), std::string::npos) << e;
}

TEST(Site, RunsAreCheckedAgainstTheSite) {
  Site site = load_site_file(site_dir() + "example-slurm-gpu.yaml");
  EXPECT_EQ(site_check_run(site, "a100", "openmpi", "lustre"), "");
  EXPECT_EQ(site_check_run(site, "none", "any", "local"), "");
  std::string e = site_check_run(site, "v100", "openmpi", "lustre");
  EXPECT_NE(e.find("key 'gpu': 'v100'"), std::string::npos) << e;
  EXPECT_NE(e.find("a100, h100"), std::string::npos) << e;
  e = site_check_run(site, "any", "openmpi", "lustre");  // `any` is an entry like a generation
  EXPECT_NE(e.find("key 'gpu': 'any' is not a GPU of site"), std::string::npos) << e;
  EXPECT_NE(e.find("add a `gpu: {any: {...}}` entry that requests any GPU"), std::string::npos) << e;
  EXPECT_EQ(site_check_run(load_site_file(site_dir() + "gpu_cluster_example.yaml"), "any", "openmpi", "lustre"), "");
  e = site_check_run(site, "none", "intelmpi", "local");
  EXPECT_NE(e.find("key 'mpi_flavor': 'intelmpi'"), std::string::npos) << e;
  e = site_check_run(site, "none", "openmpi", "gpfs");
  EXPECT_NE(e.find("key 'dataset.storage': 'gpfs'"), std::string::npos) << e;
  EXPECT_NE(e.find("local, lustre, nvme"), std::string::npos) << e;
}

TEST(Site, StorageMappingAndStageIn) {
  const fs::path dir = fs::temp_directory_path() / ("ts_site_stage_" + std::to_string(::getpid()));
  fs::remove_all(dir);
  fs::create_directories(dir / "shared" / "fashion-mnist" / "sub");
  std::ofstream(dir / "shared" / "fashion-mnist" / "a.bin") << "0123456789";
  std::ofstream(dir / "shared" / "fashion-mnist" / "sub" / "b.bin") << "abc";
  const std::string text = "scheduler: local\nstorage:\n  local: {}\n  shared: {path: " + (dir / "shared").string() +
                           "}\n  node: {path: " + (dir / "node").string() + ", stage_from: shared}\n";
  Site site = parse_site_file(text, "site.yaml");

  StagedData as_written = stage_dataset(site, "local", "/usr/share/datasets/fashion-mnist");
  EXPECT_EQ(as_written.root, "/usr/share/datasets/fashion-mnist");
  EXPECT_FALSE(as_written.copied);

  StagedData shared = stage_dataset(site, "shared", "/usr/share/datasets/fashion-mnist/");
  EXPECT_EQ(shared.root, (dir / "shared" / "fashion-mnist").string());
  EXPECT_FALSE(shared.copied);

  StagedData first = stage_dataset(site, "node", "/usr/share/datasets/fashion-mnist");
  EXPECT_EQ(first.root, (dir / "node" / "fashion-mnist").string());
  EXPECT_TRUE(first.copied);
  EXPECT_GE(first.seconds, 0.0);
  EXPECT_EQ(fs::file_size(dir / "node" / "fashion-mnist" / "a.bin"), 10u);
  EXPECT_EQ(fs::file_size(dir / "node" / "fashion-mnist" / "sub" / "b.bin"), 3u);
  EXPECT_TRUE(fs::exists(dir / "node" / "fashion-mnist" / ".trainscale-staged"));

  StagedData second = stage_dataset(site, "node", "/usr/share/datasets/fashion-mnist");  // already staged
  EXPECT_FALSE(second.copied);
  EXPECT_EQ(second.seconds, 0.0);

  EXPECT_THROW(stage_dataset(site, "node", "/data/cifar10"), RuntimeError);  // no source to copy
  fs::remove_all(dir);
}

TEST(Site, ScratchIsTheNodeLocalStagingDirectory) {
  EXPECT_EQ(parse_site_file("scheduler: local\n", "site.yaml").scratch, "");
  EXPECT_EQ(parse_site_file("scheduler: local\nscratch: /local/scratch\n", "site.yaml").scratch, "/local/scratch");
}

TEST(Site, ShellQuote) {
  EXPECT_EQ(shell_quote("/opt/x/bin/trainscale"), "/opt/x/bin/trainscale");
  EXPECT_EQ(shell_quote("--mpi=pmix"), "--mpi=pmix");
  EXPECT_EQ(shell_quote("a b"), "'a b'");
  EXPECT_EQ(shell_quote("it's"), "'it'\\''s'");
  EXPECT_EQ(shell_quote(""), "''");
}

// scheduler: simulate (trainscale-sim through the local executor, docs/sweeps.md).
TEST(Site, SimulateSitesNameTheirCluster) {
  Site sim = load_site_file(site_dir() + "simulate-skylake.yaml");
  EXPECT_EQ(sim.scheduler, "simulate");
  EXPECT_EQ(sim.simulate.cluster, "configs/clusters/skylake-8180m.yaml");
  EXPECT_EQ(sim.simulate.steps, 1);
  EXPECT_EQ(sim.throttle, 2);  // two simulations at a time: one process, one core each
  // The simulator stands for any GPU, MPI library and storage.
  EXPECT_EQ(site_check_run(sim, "a100", "intel", "nvme"), "");

  std::string e = error_of("scheduler: simulate\n");
  EXPECT_NE(e.find("site.yaml:1"), std::string::npos) << e;
  EXPECT_NE(e.find("needs `simulate: {cluster:"), std::string::npos) << e;
  e = error_of("scheduler: simulate\nsimulate: {cluster: c.yaml, step: 2}\n");
  EXPECT_NE(e.find("site.yaml:2"), std::string::npos) << e;
  EXPECT_NE(e.find("did you mean 'steps'"), std::string::npos) << e;
  e = error_of("scheduler: simulate\nsimulate: {cluster: c.yaml, steps: 0}\n");
  EXPECT_NE(e.find("simulate.steps"), std::string::npos) << e;
}

// The site to start a real cluster from: account, memory, setup and modules, signal_seconds,
// the launcher chosen by a key; no root-only variables and no OMP_NUM_THREADS of its own.
TEST(Site, ExampleSlurmClusterIsReadyForARealCluster) {
  Site s = load_site_file(site_dir() + "example-slurm-cluster.yaml");
  EXPECT_EQ(s.scheduler, "slurm");
  EXPECT_EQ(s.account, "proj123");
  EXPECT_EQ(s.mem, "16G");
  EXPECT_EQ(s.pack, 1);
  EXPECT_GT(s.signal_seconds, 0);
  EXPECT_TRUE(s.requeue);
  EXPECT_FALSE(s.setup.empty());
  EXPECT_FALSE(s.mpi.at("openmpi").modules.empty());
  EXPECT_EQ(s.mpi.at("openmpi").launcher, "srun");
  EXPECT_EQ(s.mpi.at("mpich").srun_mpi, "pmi2");
  EXPECT_FALSE(s.mpi.at("openmpi").binary.empty());
  for (const auto& [name, value] : s.env) {
    EXPECT_EQ(name.find("ALLOW_RUN_AS_ROOT"), std::string::npos) << name;
    EXPECT_NE(name, "OMP_NUM_THREADS");
  }
}

TEST(Site, PackAndDefaultMemory) {
  const std::string tail = "mpi:\n  openmpi: {launcher: srun}\nstorage:\n  local: {}\n";
  Site s = parse_site_file("scheduler: slurm\npack: 4\ndefaults: {mem: 8G}\n" + tail, "site.yaml");
  EXPECT_EQ(s.pack, 4);
  EXPECT_EQ(s.mem, "8G");
  EXPECT_EQ(parse_site_file("scheduler: pbs\npack: 1000\n" + tail, "site.yaml").pack, 1000);
  EXPECT_EQ(parse_site_file("scheduler: slurm\n" + tail, "site.yaml").pack, 1);  // default: one run per task
  std::string e = error_of("scheduler: slurm\npack: 0\n");
  EXPECT_NE(e.find("site.yaml:2: key 'pack': '0' is not an integer >= 1"), std::string::npos) << e;
  e = error_of("scheduler: slurm\npack: 1001\n");
  EXPECT_NE(e.find("key 'pack': 1001 is out of range; accepted: 1 ... 1000"), std::string::npos) << e;
  e = error_of("scheduler: local\npack: 3\n");
  EXPECT_NE(e.find("key 'pack': 3 runs per allocation needs scheduler slurm or pbs"), std::string::npos) << e;
  EXPECT_EQ(error_of("scheduler: local\npack: 1\n"), "");
  e = error_of("scheduler: slurm\ndefaults: {mem: 16}\n");
  EXPECT_NE(e.find("key 'defaults.mem': '16' is not a memory size"), std::string::npos) << e;
}
