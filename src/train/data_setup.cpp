// The "set-up data" phase (see data_setup.h).
#include "train/data_setup.h"

#include <algorithm>

#include "core/error.h"
#include "core/rng.h"

namespace ts {
namespace {

void open_splits(const RunConfig& r, RunData& d) {
  const DatasetConfig& c = r.dataset;
  if (c.name == "fashion_mnist" || c.name == "mnist") {
    d.train = read_idx_dataset(c.root, Split::train, c.name);
    d.test = read_idx_dataset(c.root, Split::test, c.name);
  } else if (c.name == "cifar10") {
    d.train = read_cifar10_dataset(c.root, Split::train);
    d.test = read_cifar10_dataset(c.root, Split::test);
  } else if (c.name == "neuron") {
    d.train = make_neuron_dataset(c.synthetic_samples, seed_mix(r.seed, 11));
    d.test = make_neuron_dataset(std::min<int64_t>(c.synthetic_samples, 1024), seed_mix(r.seed, 12));
  } else {  // synthetic: shaped for the model
    const ModelInput in = model_expected_input(r.model);
    const int64_t classes = std::max<int64_t>(in.outputs, 1);
    d.train = make_synthetic_dataset(in.sample, classes, c.synthetic_samples, seed_mix(r.seed, 21));
    d.test = make_synthetic_dataset(in.sample, classes, std::min<int64_t>(c.synthetic_samples, 1024),
                                    seed_mix(r.seed, 22));
  }
  d.input.sample = d.train.sample;
  d.input.outputs = d.train.classes > 0
                        ? d.train.classes
                        : static_cast<int64_t>(d.train.targets.size() / std::max<int64_t>(d.train.count, 1));
  d.train_count = d.train.count;
  d.test_count = d.test.count;
}

}  // namespace

std::unique_ptr<RunData> set_up_data(const ResolvedConfig& cfg, int64_t batch, int rank, int world) {
  const RunConfig& r = cfg.run;
  auto d = std::make_unique<RunData>();
  open_splits(r, *d);
  if (d->train_count < batch * world)
    throw ConfigError(cfg.locate(r.batch_per_worker > 0 ? "batch_per_worker" : "global_batch") +
                      ": the global batch of " + std::to_string(world) + " worker(s) x " + std::to_string(batch) +
                      " exceeds the " + std::to_string(d->train_count) + " training samples; use a smaller batch");
  LoaderOptions train;
  train.batch = batch;
  train.shuffle = r.dataset.shuffle;
  train.seed = seed_mix(r.seed, 1);
  train.threads = r.dataset.loader_threads;
  train.prefetch = r.dataset.prefetch;
  train.rank = rank;
  train.world = world;
  train.drop_last = true;
  d->train_loader = std::make_unique<Loader>(d->train, train);
  // Evaluation batches are bounded by eval.batch (the training batch unless set), so evaluation
  // needs no more activation memory than training.
  LoaderOptions eval = train;
  eval.batch = std::min<int64_t>(r.eval.batch, std::max<int64_t>(d->test_count / world, 1));
  eval.shuffle = false;
  eval.drop_last = false;
  d->eval_loader = std::make_unique<Loader>(d->test, eval);
  return d;
}

}  // namespace ts
