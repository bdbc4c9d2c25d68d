// The data-set registry: which data sets and formats this build knows, and opening a data set
// as two SampleSources (train and test split). The config module asks it for the accepted
// names; the trainer opens the run's data with open_dataset. data/ knows no models: the shape
// of synthetic data comes in through DataOptions.
#pragma once

#include <cstdint>
#include <memory>
#include <string>
#include <vector>

#include "data/sample_source.h"

namespace ts {

struct DataOptions {
  std::string name = "fashion_mnist";  // a dataset_names() entry
  std::string format;                  // a dataset_formats(name) entry; empty: the first (default)
  std::string root = "/usr/share/datasets/fashion-mnist";  // directory of the files (file formats)
  std::string storage = "local";       // a storage_names() entry (storage.h)
  std::string endpoint;                // blob storage: the S3 endpoint (dataset.endpoint)
  double blob_deadline_s = 30;         // blob storage: request deadlines (dataset.blob_deadline_s,
  double blob_min_kib_s = 16;          // dataset.blob_min_kib_s; data/blob_retry.h)
  uint64_t seed = 1;                   // the run seed; generated data sets derive their splits' seeds
  int64_t synthetic_samples = 8192;    // synthetic/neuron training samples; test: min(this, 1024)
  SampleSpec synthetic;                // synthetic: the model's input shape and classes (or outputs)
  Shape image_shape;                   // jpeg_dir: the model's input (C,H,W) images are transformed to
  double test_fraction = 0.1;          // jpeg_dir, ROOT/<class> layout: the share held out as test
  int64_t shuffle_buffer = 0;          // records: shuffled order through a buffer of this many samples (0: full)
};

struct DataSplits {
  std::unique_ptr<SampleSource> train, test;
};

// Opens both splits. Throws ConfigError for an unknown name, format or storage (listing the
// accepted ones), RuntimeError naming the file for a missing or malformed file.
DataSplits open_dataset(const DataOptions& options);
// Opens one split (as open_dataset).
std::unique_ptr<SampleSource> open_split(const DataOptions& options, Split split);

// Data set names (dataset.name): fashion_mnist, mnist, cifar10, synthetic, neuron, imagefolder.
std::vector<std::string> dataset_names();
// Every format some data set accepts (dataset.format): idx, records, hdf5, jpeg_dir, cifar_bin, synthetic.
std::vector<std::string> dataset_format_names();
// The formats data set `name` can be read from, its default first (fashion_mnist, mnist -> idx;
// cifar10 -> cifar_bin; synthetic, neuron -> synthetic; imagefolder -> jpeg_dir); ConfigError
// for an unknown name.
std::vector<std::string> dataset_formats(const std::string& name);
// The class names of a labelled data set of stored images (label i is names[i]), as directory
// names (jpeg_dir); empty for generated data sets. ConfigError for an unknown name.
std::vector<std::string> dataset_class_names(const std::string& name);

}  // namespace ts
