// The "set-up data" phase (see data_setup.h).
#include "train/data_setup.h"

#include <algorithm>
#include <utility>

#include "core/error.h"

namespace ts {

std::unique_ptr<RunData> open_run_data(const RunDataOptions& options, int64_t batch, int world,
                                       InputPreparation prepared) {
  auto d = std::make_unique<RunData>();
  d->prepared = std::move(prepared);
  // The data set as two sample sources, read per batch by the loaders.
  d->splits = open_dataset(options.source);
  const SampleSpec& spec = d->splits.train->spec();
  d->input.sample = spec.sample;
  d->input.outputs = spec.classes > 0 ? spec.classes : spec.outputs;
  d->train_count = d->splits.train->count();
  d->test_count = d->splits.test->count();
  if (d->train_count < batch * world)
    throw ConfigError(options.batch_where + ": the global batch of " + std::to_string(world) + " worker(s) x " +
                      std::to_string(batch) + " exceeds the " + std::to_string(d->train_count) + " training samples; use a smaller batch");
  return d;
}

void start_loaders(const RunDataOptions& o, RunData& data, int64_t batch, int rank, int world, SlotAllocator slots,
                   int64_t first_batch, TrainShare share, bool whole_test_split) {
  LoaderOptions train;
  train.batch = batch;
  train.shuffle = o.shuffle;
  train.seed = o.seed;
  train.threads = o.threads;
  train.prefetch = o.prefetch;
  train.rank = rank;
  train.world = world;
  train.drop_last = true;
  train.first_batch = first_batch;
  train.allocate = std::move(slots);
  train.global_batch = share.global_batch;
  train.share_offset = share.offset;
  train.max_batch = share.max_batch;
  train.later_shares = std::move(share.later);
  data.train_loader = std::make_unique<Loader>(*data.splits.train, train);
  // Evaluation batches are bounded by eval.batch (the training batch unless set), so evaluation
  // needs no more activation memory than training.
  LoaderOptions eval = train;
  eval.global_batch = eval.share_offset = eval.max_batch = 0;
  eval.shuffle = false;
  eval.drop_last = false;
  eval.first_batch = 0;  // every evaluation pass starts at the beginning of the test split
  if (whole_test_split) {
    eval.rank = 0;
    eval.world = 1;
  }
  eval.batch = std::min<int64_t>(o.eval_batch, std::max<int64_t>(data.test_count / eval.world, 1));
  data.eval_loader = std::make_unique<Loader>(*data.splits.test, eval);
}

}  // namespace ts
