// The "set-up data" phase (see data_setup.h).
#include "train/data_setup.h"

#include <algorithm>
#include <utility>

#include "core/error.h"
#include "core/rng.h"

namespace ts {
namespace {

// The data set of the config as two sample sources, read per batch by the loaders; synthetic
// data is shaped for the model.
void open_splits(const RunConfig& r, RunData& d) {
  d.splits = open_dataset(data_options_of(r, d.prepared));
  const SampleSpec& spec = d.splits.train->spec();
  d.input.sample = spec.sample;
  d.input.outputs = spec.classes > 0 ? spec.classes : spec.outputs;
  d.train_count = d.splits.train->count();
  d.test_count = d.splits.test->count();
}

}  // namespace

DataOptions data_options_of(const RunConfig& r, const InputPreparation& prepared) {
  const DatasetConfig& c = r.dataset;
  const ModelInput model = model_expected_input(r.model);
  DataOptions options;
  options.name = c.name;
  options.format = c.format;
  options.root = prepared.root;
  options.storage = prepared.storage;
  options.endpoint = c.endpoint;
  options.blob_deadline_s = c.blob_deadline_s;
  options.blob_min_kib_s = c.blob_min_kib_s;
  options.seed = r.seed;
  options.synthetic_samples = c.synthetic_samples;
  options.synthetic = {model.sample, std::max<int64_t>(model.outputs, 1), 0};
  options.shuffle_buffer = c.shuffle_buffer;
  options.image_shape = model.sample;  // jpeg_dir transforms every image to the model's input
  options.test_fraction = c.test_fraction;
  return options;
}

std::unique_ptr<RunData> open_run_data(const ResolvedConfig& cfg, int64_t batch, int world, InputPreparation prepared) {
  const RunConfig& r = cfg.run;
  auto d = std::make_unique<RunData>();
  d->prepared = std::move(prepared);
  open_splits(r, *d);
  if (d->train_count < batch * world)
    throw ConfigError(cfg.locate(r.batch_per_worker > 0 ? "batch_per_worker" : "global_batch") +
                      ": the global batch of " + std::to_string(world) + " worker(s) x " + std::to_string(batch) +
                      " exceeds the " + std::to_string(d->train_count) + " training samples; use a smaller batch");
  return d;
}

void start_loaders(const ResolvedConfig& cfg, RunData& data, int64_t batch, int rank, int world, SlotAllocator slots,
                   int64_t first_batch, TrainShare share, bool whole_test_split) {
  const RunConfig& r = cfg.run;
  RunData* d = &data;
  LoaderOptions train;
  train.batch = batch;
  train.shuffle = r.dataset.shuffle;
  train.seed = seed_mix(r.seed, 1);
  train.threads = r.dataset.loader_threads;
  train.prefetch = r.dataset.prefetch;
  train.rank = rank;
  train.world = world;
  train.drop_last = true;
  train.first_batch = first_batch;
  train.allocate = std::move(slots);
  train.global_batch = share.global_batch;
  train.share_offset = share.offset;
  train.max_batch = share.max_batch;
  train.later_shares = std::move(share.later);
  d->train_loader = std::make_unique<Loader>(*d->splits.train, train);
  // Evaluation batches are bounded by eval.batch (the training batch unless set), so evaluation
  // needs no more activation memory than training.
  LoaderOptions eval = train;
  eval.global_batch = eval.share_offset = eval.max_batch = 0;
  eval.batch = std::min<int64_t>(r.eval.batch, std::max<int64_t>(d->test_count / world, 1));
  eval.shuffle = false;
  eval.drop_last = false;
  eval.first_batch = 0;  // every evaluation pass starts at the beginning of the test split
  if (whole_test_split) {
    eval.rank = 0;
    eval.world = 1;
    eval.batch = std::min<int64_t>(r.eval.batch, std::max<int64_t>(d->test_count, 1));
  }
  d->eval_loader = std::make_unique<Loader>(*d->splits.test, eval);
}

}  // namespace ts
