// The "set-up data" phase of a run: the data set of the config, opened, and this rank's
// training and evaluation loaders. Everything the trainer knows about data access is here.
#pragma once

#include <cstdint>
#include <memory>
#include <string>

#include "data/datasets.h"
#include "data/loader.h"
#include "nn/models.h"
#include "train/input_preparation.h"

namespace ts {

struct RunData {
  DataSplits splits;    // the splits as sample sources (the loaders reference them)
  ModelInput input;     // what the data gives the model: per-sample shape, classes / outputs
  std::unique_ptr<Loader> train_loader, eval_loader;
  int64_t train_count = 0, test_count = 0;  // samples per split (logs, batch checks)
  InputPreparation prepared;  // where the sources read, staging and cache (the run file's /io)
};

// What the data phase takes of the run's settings, packed once by the trainer
// (train/phase_options.h).
struct RunDataOptions {
  DataOptions source;       // the data set, read where input preparation says
  std::string batch_where;  // where the batch was set (for the message when it is too large)
  bool shuffle = true;      // dataset.shuffle
  uint64_t seed = 0;        // the training loader's shuffle stream
  int threads = 1;          // dataset.loader_threads
  int prefetch = 2;         // dataset.prefetch
  int64_t eval_batch = 0;   // eval.batch
};

// The data set opened (no loaders yet: the memory check comes first, train/memory_estimate.h).
// `batch`: the per-worker training batch. ConfigError (naming the batch key) when the global
// batch exceeds the training split; RuntimeError naming the file for unreadable data.
// `prepared`: where options.source reads (prepare_input: dataset.root, or its staged copy).
std::unique_ptr<RunData> open_run_data(const RunDataOptions& options, int64_t batch, int world,
                                       InputPreparation prepared);

// This rank's part of each global training batch when the ranks' shares differ
// (docs/heterogeneous.md); global_batch 0: the equal split.
struct TrainShare {
  int64_t global_batch = 0, offset = 0, max_batch = 0;
  std::vector<LoaderOptions::ShareFrom> later;  // a resumed run's decided changes after first_batch
};

// This rank's training and evaluation loaders over `data`'s splits. `slots`: the memory of the
// loaders' batch slots (empty: aligned host memory; page-locked memory from the backend for
// devices the host cannot address, so batches copy asynchronously). `first_batch`: the training
// loader's first batch (a resumed run's steps so far). `share`: this rank's part of
// each global batch, `batch` samples from share.offset on. `whole_test_split`: the evaluation
// loader reads all of the test split, not shard `rank` of `world` (hogwild: the shards are threads).
void start_loaders(const RunDataOptions& options, RunData& data, int64_t batch, int rank, int world,
                   SlotAllocator slots = {}, int64_t first_batch = 0, TrainShare share = {},
                   bool whole_test_split = false);

}  // namespace ts
