// Run-config parsing, validation and resolution: accepted keys, defaults, overrides, and the
// error messages for bad input (file:line, key, accepted values, suggestion).
#include <gtest/gtest.h>

#include <filesystem>
#include <fstream>

#include "backend/backend.h"
#include "backend/gpu_generation.h"
#include "core/error.h"
#include "config/config_id.h"
#include "config/run_config.h"
#include "config/enums.h"
#include "config/schema.h"

using namespace ts;

namespace {

std::string error_of(const std::string& yaml, const std::vector<std::string>& overrides = {}) {
  try {
    parse_run_config(yaml, "cfg.yaml", overrides);
  } catch (const ConfigError& e) {
    return e.what();
  }
  return "";
}

}  // namespace

TEST(RunConfig, DefaultsAndTypes) {
  auto c = parse_run_config("model: lenet\nlr: 0.1\n", "cfg.yaml", {});
  EXPECT_EQ(c.run.model, "lenet");
  EXPECT_DOUBLE_EQ(c.run.lr, 0.1);
  EXPECT_EQ(c.run.batch_per_worker, 64);  // documented default when neither batch key is given
  EXPECT_EQ(c.run.global_batch, 0);
  EXPECT_DOUBLE_EQ(c.run.epochs, 1.0);
  EXPECT_EQ(c.run.dist.allreduce, AllreduceAlgorithm::ring);
  EXPECT_TRUE(c.run.dist.overlap);
  EXPECT_EQ(c.flat.at("dist.allreduce"), "ring");
  EXPECT_EQ(c.flat.at("lr"), "0.1");
  EXPECT_EQ(c.where.at("lr"), "cfg.yaml:2");
}

TEST(RunConfig, NestedFlowMappingsAndOverrides) {
  auto c = parse_run_config("dist: {strategy: sync, allreduce: tree, bucket_mb: 4}\nglobal_batch: 128\nworkers: 2\n",
                            "cfg.yaml", {"dist.allreduce=mpi", "lr=0.2", "dataset.shuffle=false"});
  EXPECT_EQ(c.run.dist.allreduce, AllreduceAlgorithm::mpi);
  EXPECT_DOUBLE_EQ(c.run.dist.bucket_mb, 4.0);
  EXPECT_EQ(c.run.global_batch, 128);
  EXPECT_EQ(c.run.batch_for(2), 64);
  EXPECT_FALSE(c.run.dataset.shuffle);
  EXPECT_EQ(c.where.at("dist.allreduce"), "--set dist.allreduce=mpi");
}

TEST(RunConfig, CanonicalYamlIsStableAndHashable) {
  auto a = parse_run_config("lr: 0.05\nmodel: lenet\n", "a.yaml", {});
  auto b = parse_run_config("model: lenet\nlr: 5.0e-2\n", "b.yaml", {});
  EXPECT_EQ(a.yaml, b.yaml);  // key order and number spelling do not matter
  EXPECT_EQ(config_id_of(a.yaml), config_id_of(b.yaml));
  EXPECT_EQ(config_id_of(a.yaml).size(), 12u);
  auto c = parse_run_config("model: lenet\nlr: 0.06\n", "c.yaml", {});
  EXPECT_NE(config_id_of(a.yaml), config_id_of(c.yaml));
  // The canonical text parses back to the same configuration.
  auto again = parse_run_config(a.yaml, "resolved", {});
  EXPECT_EQ(again.yaml, a.yaml);
}

TEST(RunConfig, UnknownKeySuggestsClosest) {
  std::string e = error_of("model: lenet\nlearning_rate: 0.1\nmomentun: 0.9\n");
  EXPECT_NE(e.find("cfg.yaml:2"), std::string::npos) << e;
  EXPECT_NE(e.find("unknown key 'learning_rate'"), std::string::npos) << e;
  e = error_of("momentun: 0.9\n");
  EXPECT_NE(e.find("did you mean 'momentum'"), std::string::npos) << e;
  e = error_of("dist: {alreduce: ring}\n");
  EXPECT_NE(e.find("dist.alreduce"), std::string::npos) << e;
  EXPECT_NE(e.find("did you mean 'dist.allreduce'"), std::string::npos) << e;
  e = error_of("", {"dist.alreduce=ring"});
  EXPECT_NE(e.find("--set dist.alreduce=ring"), std::string::npos) << e;
}

TEST(RunConfig, WrongTypes) {
  std::string e = error_of("model: lenet\nepochs: two\n");
  EXPECT_NE(e.find("cfg.yaml:2: key 'epochs'"), std::string::npos) << e;
  EXPECT_NE(e.find("not a finite number"), std::string::npos) << e;
  e = error_of("threads: 1.5\n");
  EXPECT_NE(e.find("not an integer"), std::string::npos) << e;
  e = error_of("dist: {overlap: maybe}\n");
  EXPECT_NE(e.find("true or false"), std::string::npos) << e;
  e = error_of("lr: [0.1, 0.2]\n");
  EXPECT_NE(e.find("not a list"), std::string::npos) << e;
  e = error_of("dist: ring\n");
  EXPECT_NE(e.find("must be a mapping"), std::string::npos) << e;
  e = error_of("model: lenet\n  bad indent: [\n");
  EXPECT_NE(e.find("not valid YAML"), std::string::npos) << e;
}

TEST(RunConfig, EnumerationsListAcceptedValues) {
  std::string e = error_of("precision: fp64\n");
  EXPECT_NE(e.find("accepted: fp32 | bf16 | fp16 | tf32"), std::string::npos) << e;
  e = error_of("dist: {allreduce: rnig}\n");
  EXPECT_NE(e.find("did you mean 'ring'"), std::string::npos) << e;
  e = error_of("model: lenet5\n");
  EXPECT_NE(e.find("did you mean 'lenet'"), std::string::npos) << e;
}

TEST(RunConfig, ImpossibleValues) {
  EXPECT_NE(error_of("lr: -0.1\n").find("must be > 0"), std::string::npos);
  EXPECT_NE(error_of("batch_per_worker: 0\n").find("must be > 0"), std::string::npos);
  EXPECT_NE(error_of("momentum: 1.0\n").find("[0, 1)"), std::string::npos);
  EXPECT_NE(error_of("threads: 0\n").find("must be > 0"), std::string::npos);
  EXPECT_NE(error_of("batch_per_worker: 32\nglobal_batch: 64\n").find("exactly one of batch_per_worker, global_batch"),
            std::string::npos);
  EXPECT_NE(error_of("epochs: 1\nsteps: 10\n").find("exactly one of epochs, steps, train_samples"), std::string::npos);
  EXPECT_NE(error_of("global_batch: 100\nworkers: 3\n").find("does not divide evenly"), std::string::npos);
  EXPECT_NE(error_of("nesterov: true\nmomentum: 0\n").find("Nesterov"), std::string::npos);
  EXPECT_NE(error_of("dataset: {name: cifar10, format: idx}\n").find("accepts: cifar_bin"), std::string::npos);
  EXPECT_NE(error_of("dataset: {name: synthetic, format: records}\n").find("does not fit data set 'synthetic'"),
            std::string::npos);
}

// The backend key accepts exactly the backend API's names, each of which is a BackendKind.
TEST(RunConfig, BackendNamesComeFromTheBackendApi) {
  std::vector<std::string> kinds;
  for (BackendKind k : all_backend_kinds()) kinds.push_back(backend_kind_name(k));
  EXPECT_EQ(kinds, known_backends());
  for (const std::string& name : known_backends()) {
    const auto c = parse_run_config("backend: " + name + "\n", "cfg.yaml", {});
    EXPECT_EQ(backend_kind_name(c.run.backend), name);
  }
  EXPECT_NE(error_of("backend: gpu\n").find("ref | cpu | cuda"), std::string::npos) << error_of("backend: gpu\n");
}

// Enum-like keys are enums from parse time on; names come from the registries.
TEST(RunConfig, EnumLikeKeysAreTyped) {
  auto c = parse_run_config(
      "precision: bf16\nbackend: ref\nmpi_flavor: mpich\nlr_schedule: {kind: cosine, scale: linear}\n"
      "dist: {strategy: weight_avg, allreduce: nccl}\n",
      "cfg.yaml", {});
  EXPECT_EQ(c.run.precision, Precision::bf16);
  EXPECT_EQ(c.run.backend, BackendKind::ref);
  EXPECT_EQ(c.run.mpi_flavor, MpiFlavor::mpich);
  EXPECT_EQ(c.run.lr_schedule.kind, LrScheduleKind::cosine);
  EXPECT_EQ(c.run.lr_schedule.scale, LrScale::linear);
  EXPECT_EQ(c.run.dist.strategy, DistStrategy::weight_avg);
  EXPECT_EQ(c.run.dist.allreduce, AllreduceAlgorithm::nccl);  // known; refused where not built, at run time
  EXPECT_EQ(c.flat.at("precision"), "bf16");
  // Every model of the model registry is accepted, and the message lists them.
  for (const char* model : {"lenet", "resnet50", "inception_v3"})
    EXPECT_EQ(error_of(std::string("model: ") + model + "\n"), "") << model;
  EXPECT_NE(error_of("model: resnet51\n").find("resnet20 | resnet50"), std::string::npos);
}

// Defaults that depend on other keys are resolved into the canonical config: the data set's own
// format, and the evaluation batch = the training batch per worker.
TEST(RunConfig, DerivedDefaults) {
  auto s = parse_run_config("", "cfg.yaml", {"model=resnet50", "dataset.name=synthetic", "batch_per_worker=32", "steps=2"});
  EXPECT_EQ(s.run.dataset.format, "synthetic");
  EXPECT_EQ(s.run.eval.batch, 32);
  EXPECT_EQ(s.flat.at("dataset.format"), "synthetic");
  EXPECT_EQ(s.flat.at("eval.batch"), "32");
  EXPECT_EQ(parse_run_config("dataset: {name: cifar10}\n", "cfg.yaml", {}).run.dataset.format, "cifar_bin");
  EXPECT_EQ(parse_run_config("", "cfg.yaml", {}).run.eval.batch, 64);  // the default batch
  EXPECT_EQ(parse_run_config("global_batch: 96\nworkers: 3\n", "cfg.yaml", {}).run.eval.batch, 32);
  EXPECT_EQ(parse_run_config("eval: {batch: 0}\nbatch_per_worker: 16\n", "cfg.yaml", {}).run.eval.batch, 16);
  EXPECT_EQ(parse_run_config("eval: {batch: 500}\n", "cfg.yaml", {}).run.eval.batch, 500);
  // 0 and the training batch are the same run.
  EXPECT_EQ(parse_run_config("eval: {batch: 0}\n", "a", {}).yaml, parse_run_config("eval: {batch: 64}\n", "b", {}).yaml);
  EXPECT_NE(error_of("eval: {batch: -1}\n").find("must be >= 0"), std::string::npos);
}

// `gpu` names a generation (the backend API's list), none or any; it is an enum from parse time
// on, and its default follows the backend: any for cuda, none for the CPU backends.
TEST(RunConfig, GpuIsAGenerationCheckedAgainstTheBackend) {
  std::vector<std::string> names;
  for (GpuGeneration g : all_gpu_generations()) names.push_back(gpu_generation_name(g));
  std::vector<std::string> expected = {"none"};
  for (const std::string& g : known_gpu_generations()) expected.push_back(g);
  expected.push_back("any");
  EXPECT_EQ(names, expected);
  EXPECT_EQ(names, (std::vector<std::string>{"none", "k80", "p40", "p100", "v100", "a100", "h100", "h200", "any"}));
  for (const std::string& g : known_gpu_generations()) {
    const auto c = parse_run_config("backend: cuda\ngpu: " + g + "\n", "cfg.yaml", {});
    EXPECT_EQ(gpu_generation_name(c.run.gpu), g);
    EXPECT_EQ(c.flat.at("gpu"), g);
  }
  EXPECT_EQ(parse_run_config("backend: cuda\ngpu: any\n", "cfg.yaml", {}).run.gpu, GpuGeneration::any);

  // Derived default, resolved into the canonical config (and so into the config_id).
  EXPECT_EQ(parse_run_config("", "cfg.yaml", {}).run.gpu, GpuGeneration::none);
  EXPECT_EQ(parse_run_config("backend: ref\n", "cfg.yaml", {}).flat.at("gpu"), "none");
  const auto cuda = parse_run_config("backend: cuda\n", "cfg.yaml", {});
  EXPECT_EQ(cuda.run.gpu, GpuGeneration::any);
  EXPECT_EQ(cuda.flat.at("gpu"), "any");
  EXPECT_EQ(cuda.yaml, parse_run_config("backend: cuda\ngpu: any\n", "cfg.yaml", {}).yaml);

  // Not a generation: file, line, key, the accepted names and the closest one.
  std::string e = error_of("backend: cuda\ngpu: a10\n");
  EXPECT_NE(e.find("cfg.yaml:2: key 'gpu': 'a10' is not accepted"), std::string::npos) << e;
  EXPECT_NE(e.find("none | k80 | p40 | p100 | v100 | a100 | h100 | h200 | any"), std::string::npos) << e;
  EXPECT_NE(e.find("did you mean 'a100'"), std::string::npos) << e;
  EXPECT_NE(error_of("gpu: H100\n").find("did you mean 'h100'"), std::string::npos) << error_of("gpu: H100\n");

  // A CPU backend has no GPU: a generation or any is an error naming both sides.
  e = error_of("backend: cpu\ngpu: h100\n");
  EXPECT_NE(e.find("cfg.yaml:2: key 'gpu'"), std::string::npos) << e;
  EXPECT_NE(e.find("expects GPU generation 'h100' but backend 'cpu' (cfg.yaml:1: key 'backend') computes on the CPU "
                   "(GPU generation none)"),
            std::string::npos)
      << e;
  EXPECT_NE(e.find("set backend: cuda to run on a h100, or gpu: none"), std::string::npos) << e;
  e = error_of("gpu: any\n", {"backend=ref"});
  EXPECT_NE(e.find("'any' expects a GPU but backend 'ref' (--set backend=ref: key 'backend') computes on the CPU"),
            std::string::npos)
      << e;
  e = error_of("gpu: v100\n");  // the default backend (cpu)
  EXPECT_NE(e.find("backend 'cpu' (cfg.yaml (default): key 'backend') computes on the CPU"), std::string::npos) << e;

  // A CUDA run must expect some GPU: none is an error that says which words work.
  e = error_of("backend: cuda\ngpu: none\n");
  EXPECT_NE(e.find("cfg.yaml:2: key 'gpu': 'none' but backend 'cuda' computes on a GPU"), std::string::npos) << e;
  EXPECT_NE(e.find("say which generation the run expects, or gpu: any (accepted: k80 | p40 | p100 | v100 | a100 | h100 | "
                   "h200 | any; leaving gpu out means any)"),
            std::string::npos)
      << e;
}

// ranks: one entry per worker; an entry without a key takes the run's value; for_rank gives a
// rank its backend and threads, and a CPU rank of a run with CUDA ranks expects no GPU.
TEST(RunConfig, PerRankSettings) {
  const auto c = parse_run_config("workers: 3\nthreads: 4\nranks: [{backend: cpu, threads: 16}, {backend: cuda}, {}]\n",
                                  "cfg.yaml", {});
  EXPECT_EQ(c.flat.at("ranks.backend"), "cpu,cuda,cpu");
  EXPECT_EQ(c.flat.at("ranks.threads"), "16,4,4");
  EXPECT_EQ(c.where.at("ranks.backend"), "cfg.yaml:3");
  EXPECT_EQ(c.run.gpu, GpuGeneration::any);  // some rank computes on a GPU
  EXPECT_TRUE(c.run.mixed_backends());
  EXPECT_TRUE(c.run.dist.ranks_differ);
  EXPECT_TRUE(c.run.dist.heterogeneous());
  EXPECT_EQ(c.run.backend_names(), (std::vector<std::string>{"cpu", "cuda"}));
  const ResolvedConfig r0 = c.for_rank(0), r1 = c.for_rank(1);
  EXPECT_EQ(r0.run.backend, BackendKind::cpu);
  EXPECT_EQ(r0.run.threads, 16);
  EXPECT_EQ(r0.run.gpu, GpuGeneration::none);
  EXPECT_EQ(r1.run.backend, BackendKind::cuda);
  EXPECT_EQ(r1.run.threads, 4);
  EXPECT_EQ(r1.run.gpu, GpuGeneration::any);
  EXPECT_EQ(r1.locate("backend"), "cfg.yaml:3 (rank 1's entry): key 'backend'");
  EXPECT_EQ(r0.yaml, c.yaml);  // every rank writes and hashes the run's config

  // The two spellings are one config; equal entries are no heterogeneity.
  const auto lists = parse_run_config("workers: 3\nthreads: 4\nranks: {backend: [cpu, cuda, cpu], threads: [16, 4, 4]}\n",
                                      "cfg.yaml", {});
  EXPECT_EQ(lists.yaml, c.yaml);
  const auto same = parse_run_config("workers: 2\nranks: {threads: [2, 2]}\n", "cfg.yaml", {});
  EXPECT_FALSE(same.run.dist.ranks_differ);
  EXPECT_FALSE(same.run.mixed_backends());
  EXPECT_EQ(same.run.gpu, GpuGeneration::none);

  std::string e = error_of("workers: 2\nranks: [{backend: cpu}, {backend: cuda}]\ngpu: none\n");
  EXPECT_NE(e.find("key 'gpu': 'none' but backend 'cpu' and 'cuda' computes on a GPU"), std::string::npos) << e;
  e = error_of("workers: 2\nranks: [{backend: cpu}, 3]\n");
  EXPECT_NE(e.find("cfg.yaml:2: key 'ranks' must be a list of mappings, one per rank"), std::string::npos) << e;
  e = error_of("workers: 2\nranks: []\n");
  EXPECT_NE(e.find("key 'ranks' is an empty list"), std::string::npos) << e;
}

// Keys of earlier versions say why they went and what to do.
TEST(RunConfig, RemovedKeysAreExplained) {
  const std::string e = error_of("dist: {allreduce: shm, update: sharded}\n");
  EXPECT_NE(e.find("cfg.yaml:1"), std::string::npos) << e;
  EXPECT_NE(e.find("key 'dist.update' was removed"), std::string::npos) << e;
  EXPECT_NE(error_of("", {"dist.update=replicated"}).find("--set dist.update=replicated"), std::string::npos);
  for (const auto& [key, why] : removed_run_config_keys()) EXPECT_EQ(find_key_spec(key), nullptr) << key;
}

TEST(RunConfig, MissingFileNamesIt) {
  try {
    load_run_config("/nonexistent/dir/run.yaml", {});
    FAIL() << "expected ConfigError";
  } catch (const ConfigError& e) {
    EXPECT_NE(std::string(e.what()).find("/nonexistent/dir/run.yaml"), std::string::npos);
  }
}

TEST(RunConfig, ShippedConfigsParse) {
  for (const auto& entry : std::filesystem::directory_iterator(std::string(TRAINSCALE_SOURCE_DIR) + "/configs/runs")) {
    if (entry.path().extension() != ".yaml") continue;
    EXPECT_NO_THROW(load_run_config(entry.path().string(), {})) << entry.path();
  }
}

// checkpoint.*: unset, they stay out of the resolved config (a config without checkpoints keeps
// its config_id); set, they are typed, part of the config_id, and checked.
TEST(RunConfig, CheckpointKeys) {
  const auto plain = parse_run_config("model: lenet\n", "cfg.yaml", {});
  EXPECT_EQ(plain.yaml.find("checkpoint"), std::string::npos);
  EXPECT_FALSE(plain.run.checkpoint.enabled());
  EXPECT_FALSE(plain.run.checkpoint.keep);
  const auto set = parse_run_config("model: lenet\ncheckpoint: {every_steps: 50, every_minutes: 2.5, keep: true}\n",
                                    "cfg.yaml", {});
  EXPECT_EQ(set.run.checkpoint.every_steps, 50);
  EXPECT_EQ(set.run.checkpoint.every_minutes, 2.5);
  EXPECT_TRUE(set.run.checkpoint.keep);
  EXPECT_TRUE(set.run.checkpoint.enabled());
  EXPECT_NE(set.yaml.find("checkpoint:"), std::string::npos);
  EXPECT_NE(config_id_of(set.yaml), config_id_of(plain.yaml));
  EXPECT_EQ(set.flat.at("checkpoint.every_steps"), "50");
  EXPECT_NE(error_of("checkpoint: {every_steps: -1}\n").find("key 'checkpoint.every_steps'"), std::string::npos);
  EXPECT_NE(error_of("checkpoint: {every_minutes: -2}\n").find("must be >= 0"), std::string::npos);
  EXPECT_NE(error_of("", {"checkpoint.keep=maybe"}).find("checkpoint.keep"), std::string::npos);
  EXPECT_NE(error_of("checkpoint: {every_step: 5}\n").find("did you mean"), std::string::npos);
}

// An override replaces the other keys of its exclusive group that the YAML gave; overrides of one
// group or of one key twice are refused; ~KEY removes a key or a group (docs/config.md "Overrides").
TEST(RunConfig, OverridesReplaceTheirGroupAndRemoveKeys) {
  const std::string yaml = "model: lenet\nepochs: 2\nbatch_per_worker: 32\nlr_schedule: {kind: cosine, warmup_epochs: 0.1}\n";
  auto c = parse_run_config(yaml, "cfg.yaml", {"steps=150", "global_batch=256"});
  EXPECT_EQ(c.run.steps, 150);
  EXPECT_EQ(c.where.count("epochs"), 0u);
  EXPECT_EQ(c.run.global_batch, 256);
  EXPECT_EQ(c.where.count("batch_per_worker"), 0u);
  EXPECT_NE(error_of(yaml, {"steps=150", "epochs=1"}).find("conflicts with"), std::string::npos);
  EXPECT_NE(error_of(yaml, {"lr=0.1", "lr=0.2"}).find("key 'lr' is set twice (also --set lr=0.1)"), std::string::npos);
  EXPECT_NE(error_of(yaml + "steps: 3\n").find("conflicts with 'epochs'"), std::string::npos) << "the YAML's own conflict";
  auto removed = parse_run_config(yaml, "cfg.yaml", {"~lr_schedule.warmup_epochs"});
  EXPECT_EQ(removed.where.count("lr_schedule.warmup_epochs"), 0u);
  EXPECT_EQ(removed.where.count("lr_schedule.kind"), 1u);
  auto group = parse_run_config(yaml, "cfg.yaml", {"~lr_schedule"});
  EXPECT_EQ(group.where.count("lr_schedule.kind"), 0u);
  EXPECT_NE(error_of(yaml, {"~lrr"}).find("~KEY removes a key"), std::string::npos);
}

// A list key takes `--set k=96,32` and Hydra's `--set 'k=[96, 32]'` alike: the same config and
// config_id as the YAML list (docs/config.md "Overrides"); a value that is no list says how to
// write one in both places.
TEST(RunConfig, ListValuesInBothSpellings) {
  const std::string two = "workers: 2\nglobal_batch: 128\ndist: {partition: static}\n";
  const auto yaml = parse_run_config("workers: 2\nglobal_batch: 128\ndist: {partition: static, shares: [96, 32]}\n",
                                     "cfg.yaml", {});
  const auto commas = parse_run_config(two, "cfg.yaml", {"dist.shares=96,32"});
  const auto hydra = parse_run_config(two, "cfg.yaml", {"dist.shares=[96, 32]"});
  EXPECT_EQ(hydra.run.dist.shares, (std::vector<int64_t>{96, 32}));
  EXPECT_EQ(config_id_of(hydra.yaml), config_id_of(commas.yaml));
  EXPECT_EQ(config_id_of(hydra.yaml), config_id_of(yaml.yaml));
  const auto ranks = parse_run_config("workers: 2\n", "cfg.yaml", {"ranks.backend=[cpu, ref]", "ranks.threads=[2,1]"});
  EXPECT_EQ(ranks.flat.at("ranks.backend"), "cpu,ref");
  EXPECT_EQ(ranks.run.rank_threads, (std::vector<int>{2, 1}));

  // Wrong shares under dist.partition static: the message shows the YAML form and both --set forms.
  std::string e = error_of(two, {"dist.shares=[96, x]"});
  EXPECT_NE(e.find("--set dist.shares=[96, x]: key 'dist.shares': '96,x' is not a list of integers"), std::string::npos) << e;
  EXPECT_NE(e.find("write e.g. --set dist.shares=64,64 (or --set 'dist.shares=[64, 64]'), or dist: {shares: [64, 64]} "
                   "in the YAML file"), std::string::npos) << e;
  e = error_of(two, {"dist.shares=[96, 16]"});
  EXPECT_NE(e.find("sum to 112, not to the global batch 128"), std::string::npos) << e;
  EXPECT_NE(e.find("dist: {shares: [64, 64]} in the YAML file"), std::string::npos) << e;
  // shares from the YAML file: the YAML form first.
  e = error_of("workers: 3\nglobal_batch: 129\ndist: {partition: static, shares: [96, 33]}\n");
  EXPECT_NE(e.find("2 shares for 3 workers"), std::string::npos) << e;
  EXPECT_NE(e.find("write e.g. dist: {shares: [43, 43, 43]} in the YAML file, or --set dist.shares=43,43,43"),
            std::string::npos) << e;
  e = error_of(two, {"dist.shares=[96, 32"});  // an unclosed list
  EXPECT_NE(e.find("'[96, 32' is not a list; write --set 'dist.shares=[96, 32]' or --set dist.shares=96,32 (in the "
                   "YAML file: dist: {shares: [96, 32]})"), std::string::npos) << e;
  e = error_of(two, {"dist.shares=[[96], 32]"});
  EXPECT_NE(e.find("must be a list of numbers"), std::string::npos) << e;
}

// diverge.loss_above_factor: unset by default (out of the resolved config and the config_id),
// a number above 1 when given.
TEST(RunConfig, DivergeBoundIsUnsetUnlessGiven) {
  const auto plain = parse_run_config("model: lenet\n", "cfg.yaml", {});
  EXPECT_EQ(plain.run.diverge_loss_above_factor, 0);
  EXPECT_EQ(plain.yaml.find("diverge"), std::string::npos);
  const auto bound = parse_run_config("model: lenet\ndiverge: {loss_above_factor: 100}\n", "cfg.yaml", {});
  EXPECT_EQ(bound.run.diverge_loss_above_factor, 100);
  EXPECT_NE(config_id_of(bound.yaml), config_id_of(plain.yaml));
  EXPECT_NE(error_of("diverge: {loss_above_factor: 1}\n").find("must be > 1"), std::string::npos);
  EXPECT_NE(error_of("", {"diverge.loss_above_factor=ten"}).find("not a finite number"), std::string::npos);
}

// The defaults learn (issue 34): lr 0.01 (0.05 until then, which with momentum 0.9 blew LeNet up to
// a constant ln(10) loss). A changed default changes the config_id of the configs that rely on
// it only; a config that sets lr keeps its id.
TEST(RunConfig, DefaultLearningRateIsOneThatLearns) {
  const auto plain = parse_run_config("model: lenet\nsteps: 300\n", "cfg.yaml", {});
  EXPECT_EQ(plain.run.lr, 0.01);
  EXPECT_EQ(plain.run.momentum, 0.9);
  EXPECT_EQ(plain.run.lr_schedule.warmup_epochs, 0);
  const auto explicit_lr = parse_run_config("model: lenet\nsteps: 300\nlr: 0.01\n", "cfg.yaml", {});
  EXPECT_EQ(config_id_of(explicit_lr.yaml), config_id_of(plain.yaml)) << "the default is resolved into the config";
}

// parse_run_config reads the YAML of the text it was given last only once (sweep expansion
// resolves one base with other overrides per run): the overrides of one call never reach the
// next, and another text or origin is read again.
TEST(RunConfig, RepeatedParsesOfOneTextKeepTheirOverridesApart) {
  const std::string base = "model: lenet\nlr: 0.05\nsteps: 5\n";
  const ResolvedConfig a = parse_run_config(base, "base.yaml", {"lr=0.2", "workers=2"});
  const ResolvedConfig b = parse_run_config(base, "base.yaml", {});
  EXPECT_DOUBLE_EQ(a.run.lr, 0.2);
  EXPECT_DOUBLE_EQ(b.run.lr, 0.05);
  EXPECT_EQ(b.run.workers, 1);
  EXPECT_EQ(b.where.at("lr"), "base.yaml:2");
  EXPECT_EQ(parse_run_config(base, "other.yaml", {}).where.at("lr"), "other.yaml:2");
  EXPECT_DOUBLE_EQ(parse_run_config("model: lenet\nlr: 0.3\n", "base.yaml", {}).run.lr, 0.3);
  EXPECT_THROW(parse_run_config("model: lenet\nlr: [\n", "base.yaml", {}), ConfigError);
  EXPECT_DOUBLE_EQ(parse_run_config(base, "base.yaml", {}).run.lr, 0.05);  // the failed text cached nothing
}
