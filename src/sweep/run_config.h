// The run configuration (contract: DESIGN.md "Run configuration", docs/config.md).
// Parsed from YAML plus `--set key=value` overrides, checked against a schema of every key
// (type, accepted values, default), resolved (defaults filled in) and turned into a typed struct.
// Errors are ConfigError naming the file, line, key, what is accepted and what to do.
#pragma once

#include <cstdint>
#include <map>
#include <string>
#include <vector>

namespace YAML {
class Node;
}

namespace ts {

struct DatasetConfig {
  std::string name = "fashion_mnist";  // fashion_mnist | mnist | cifar10 | synthetic | neuron
  std::string format = "idx";          // idx | cifar_bin | synthetic (hdf5|records|jpeg_dir: later)
  std::string root = "/usr/share/datasets/fashion-mnist";
  std::string storage = "local";
  int64_t synthetic_samples = 8192;    // samples in a synthetic/neuron train split
  int loader_threads = 1;              // loader worker threads per rank
  int prefetch = 2;                    // batches prepared ahead
  bool shuffle = true;
};

struct LrScheduleConfig {
  std::string kind = "constant";  // constant | step | cosine
  double warmup_epochs = 0.0;
  double step_epochs = 1.0;       // step: decay every step_epochs
  double gamma = 0.1;             // step: decay factor
  double final_lr_fraction = 0.0; // cosine: final lr / lr
  std::string scale = "none";     // none | linear (Goyal et al.: lr * global_batch / base_batch)
  int64_t base_batch = 0;         // reference batch of `lr` for scale: linear (0 = the global batch)
};

struct DistConfig {
  std::string strategy = "sync";   // sync | weight_avg
  std::string allreduce = "ring";  // mpi | ring | tree | ps | shm | nccl (what dist/allreduce.h knows, nccl: cuda)
  double bucket_mb = 25.0;
  bool overlap = true;
  int64_t period = 1;              // weight_avg: average every `period` steps
  std::string update = "replicated";  // replicated | sharded (sync + shm: each rank steps its share)
};

struct EvalConfig {
  double every_epochs = 1.0;
  double target_accuracy = 0.90;
  int64_t batch = 1000;
};

struct RunConfig {
  std::string model = "lenet";
  DatasetConfig dataset;
  int64_t batch_per_worker = 0;  // exactly one of batch_per_worker / global_batch is set (> 0)
  int64_t global_batch = 0;
  double lr = 0.05;
  LrScheduleConfig lr_schedule;
  double momentum = 0.9;
  bool nesterov = false;
  double weight_decay = 0.0;
  double dropout = 0.0;
  double epochs = 0.0;           // exactly one of epochs / steps / train_samples is set (> 0)
  int64_t steps = 0;
  int64_t train_samples = 0;
  std::string precision = "fp32";
  std::string backend = "cpu";
  int threads = 2;
  int workers = 1;
  DistConfig dist;
  std::string gpu = "none";
  std::string mpi_flavor = "any";
  EvalConfig eval;
  uint64_t seed = 1;
  int64_t log_every = 20;

  // Derived.
  int64_t batch_for(int world) const { return batch_per_worker > 0 ? batch_per_worker : global_batch / world; }
};

// A parsed, validated and resolved configuration: the typed struct plus the canonical
// resolved YAML text (every key, defaults filled in, keys sorted) and its flattened form.
struct ResolvedConfig {
  RunConfig run;
  std::string yaml;                           // canonical resolved YAML (stable: hashing, HDF5)
  std::map<std::string, std::string> flat;    // "dist.allreduce" -> "ring"
  std::string origin;                         // file the config came from
  std::map<std::string, std::string> where;   // key -> "file:line" or "--set key=value"

  // "configs/x.yaml:12: key 'precision'" for messages about a key's value.
  std::string locate(const std::string& key) const;
};

// Reads `path`, applies `overrides` ("key=value" with dotted keys) and resolves.
ResolvedConfig load_run_config(const std::string& path, const std::vector<std::string>& overrides);
// Same from YAML text; `origin` names the source in messages (a file name or "<manifest>").
ResolvedConfig parse_run_config(const std::string& yaml_text, const std::string& origin,
                                const std::vector<std::string>& overrides);
// Every accepted dotted key (documentation order), for --help and suggestions.
std::vector<std::string> run_config_keys();
// The closest accepted key to `key` by edit distance ("" when nothing is close).
std::string closest_key(const std::string& key, const std::vector<std::string>& candidates);

}  // namespace ts
