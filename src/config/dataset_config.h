// The dataset.* keys of the run configuration (config/run_config.h, docs/config.md): what input
// preparation (train/input_preparation.h) reads without the whole config.
#pragma once

#include <cstdint>
#include <string>

namespace ts {

struct DatasetConfig {
  std::string name = "fashion_mnist";  // a data set of the data registry (config/registries.h)
  std::string format = "idx";          // resolved: the data set's own format unless given
  std::string root = "/usr/share/datasets/fashion-mnist";
  std::string storage = "local";
  int64_t synthetic_samples = 8192;    // samples in a synthetic/neuron train split
  int loader_threads = 1;              // loader worker threads per rank
  int prefetch = 2;                    // batches prepared ahead
  bool shuffle = true;
  int64_t shuffle_buffer = 0;          // records: epoch order through a shuffle buffer (0: full shuffle)
  double test_fraction = 0.1;          // jpeg_dir, ROOT/<class> layout: the share of files held out as test
  std::string stage = "none";          // none | node_local (data/node_stage.h)
  std::string stage_dir;               // node-local scratch ("": $TMPDIR or /tmp)
  std::string cache = "warm";          // warm | cold (data/page_cache.h)
  std::string endpoint = "";           // blob storage: the S3 API's URL; empty: AWS_ENDPOINT_URL
  double blob_deadline_s = 30;         // blob storage: a request's time beyond its bytes at ...
  double blob_min_kib_s = 16;          // ... this rate (data/blob_retry.h request_deadline_s)
};

}  // namespace ts
