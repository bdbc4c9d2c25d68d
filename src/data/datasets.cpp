// The data-set registry (see datasets.h). A data set is a name, the formats it can be read
// from and its normalisation statistics; a format is the code that opens a split of it.
#include "data/datasets.h"

#include <algorithm>

#include "core/error.h"
#include "core/rng.h"
#include "core/strings.h"
#include "data/cifar_source.h"
#include "data/counting_storage.h"
#include "data/hdf5_source.h"
#include "data/idx_source.h"
#include "data/jpeg_dir_source.h"
#include "data/pixel_normaliser.h"
#include "data/records_source.h"
#include "data/storage.h"
#include "data/synthetic_source.h"

namespace ts {
namespace {

struct DatasetEntry {
  std::string name;
  std::vector<std::string> formats;  // the default first
  Normalisation stats;               // per-channel training-split statistics (pixel formats)
  std::vector<std::string> classes;  // stored images: label i's name (dataset_class_names)
};

// The test split of a data set is normalised with its training statistics, as usual. Class
// names are safe as directory names (the jpeg_dir layout): '/' and ' ' became '_'.
const std::vector<DatasetEntry>& registry() {
  static const std::vector<DatasetEntry> entries = {
      {"fashion_mnist", {"idx", "records", "hdf5", "jpeg_dir"}, {{0.2860f}, {0.3530f}},
       {"T-shirt_top", "Trouser", "Pullover", "Dress", "Coat", "Sandal", "Shirt", "Sneaker", "Bag", "Ankle_boot"}},
      {"mnist", {"idx", "records", "hdf5"}, {{0.1307f}, {0.3081f}}, {"0", "1", "2", "3", "4", "5", "6", "7", "8", "9"}},
      {"cifar10", {"cifar_bin", "records", "hdf5"}, {{0.4914f, 0.4822f, 0.4465f}, {0.2470f, 0.2435f, 0.2616f}},
       {"airplane", "automobile", "bird", "cat", "deer", "dog", "frog", "horse", "ship", "truck"}},
      {"synthetic", {"synthetic"}, {}, {}},
      {"neuron", {"synthetic"}, {}, {}},
      {"imagefolder", {"jpeg_dir", "records"}, {}, {}},  // statistics by channel count: image_folder_stats
  };
  return entries;
}

const DatasetEntry& entry(const std::string& name) {
  for (const auto& e : registry())
    if (e.name == name) return e;
  throw ConfigError("dataset.name '" + name + "' is not a data set this build knows; accepted: " +
                    join(dataset_names()));
}

// Generated data: the splits have their own seeds; the test split is at most 1024 samples.
std::unique_ptr<SampleSource> open_generated(const DataOptions& o, Split split) {
  const bool train = split == Split::train;
  const int64_t count = train ? o.synthetic_samples : std::min<int64_t>(o.synthetic_samples, 1024);
  if (o.name == "neuron") return make_neuron_source(count, seed_mix(o.seed, train ? 11 : 12));
  return make_synthetic_source(o.synthetic, count, seed_mix(o.seed, train ? 21 : 22));
}

// Any ImageFolder (imagefolder), as a tree or as records: torchvision's ImageNet statistics for
// RGB, 0.5/0.5 for grey.
Normalisation image_folder_stats(const Shape& sample) {
  const bool rgb = sample.rank() > 0 && sample[0] == 3;
  return rgb ? Normalisation{{0.485f, 0.456f, 0.406f}, {0.229f, 0.224f, 0.225f}} : Normalisation{{0.5f}, {0.5f}};
}

// An ImageFolder converted to records (its JPEG files kept): transformed as the tree would be.
std::unique_ptr<SampleSource> open_image_folder_records(const DataOptions& o, Split split, const Storage& storage) {
  if (o.image_shape.rank() != 3 || (o.image_shape[0] != 1 && o.image_shape[0] != 3))
    throw ConfigError("dataset.format records of imagefolder: the model's input " + o.image_shape.str() +
                      " is not an image (1 or 3 channels, C,H,W); choose a model that takes images");
  RecordsImageOptions r;
  r.sample = o.image_shape;
  r.transform = split == Split::train ? ImageTransformKind::random_crop_flip : ImageTransformKind::centre_crop;
  r.stats = image_folder_stats(o.image_shape);
  r.classes = static_cast<int64_t>(read_records_class_names(storage, o.root).size());
  r.shuffle_buffer = o.shuffle_buffer;
  return open_records_image_source(storage, o.root, split, o.name, r);
}

// Any ImageFolder tree (imagefolder): training augments (random-resized crop + flip),
// evaluation resizes and centre-crops.
// Fashion-MNIST as JPEGs (data convert --format jpeg_dir): its own statistics, every image
// resized to the model's input as it is, so that it compares with idx on the format alone.
std::unique_ptr<SampleSource> open_jpeg_dir(const DataOptions& o, const DatasetEntry& e, Split split,
                                            std::unique_ptr<Storage> storage) {
  JpegDirOptions j;
  j.root = o.root;
  j.sample = o.image_shape;
  j.test_fraction = o.test_fraction;
  if (o.name == "imagefolder") {
    j.stats = image_folder_stats(j.sample);
  } else {
    j.stats = e.stats;
    j.class_names = e.classes;  // labels as idx has them, not sorted folder names
    j.train_transform = j.test_transform = ImageTransformKind::resize;
  }
  return open_jpeg_dir_source(std::move(storage), j, split);
}

}  // namespace

std::unique_ptr<SampleSource> open_split(const DataOptions& o, Split split) {
  const DatasetEntry& e = entry(o.name);
  const std::string format = o.format.empty() ? e.formats.front() : o.format;
  if (std::find(e.formats.begin(), e.formats.end(), format) == e.formats.end())
    throw ConfigError("dataset.format '" + format + "' does not fit data set '" + o.name + "'; it accepts: " +
                      join(e.formats));
  if (o.shuffle_buffer > 0 && format != "records")
    throw ConfigError("dataset.shuffle_buffer " + std::to_string(o.shuffle_buffer) + " is for dataset.format records; "
                      "format '" + format + "' is shuffled in full: leave dataset.shuffle_buffer out (0)");
  if (format == "synthetic") return open_generated(o, split);
  auto storage = make_counting_storage(make_storage({o.storage, o.endpoint, o.blob_deadline_s, o.blob_min_kib_s}));  // reads counted per batch
  if (format == "idx") return open_idx_source(*storage, o.root, split, o.name, e.stats);
  if (format == "cifar_bin") return open_cifar10_source(*storage, o.root, split, e.stats);
  if (format == "jpeg_dir") return open_jpeg_dir(o, e, split, std::move(storage));
  const int64_t classes = static_cast<int64_t>(e.classes.size());
  if (format == "records" && o.name == "imagefolder") return open_image_folder_records(o, split, *storage);
  if (format == "records")
    return open_records_source(*storage, o.root, split, o.name, classes, e.stats, o.shuffle_buffer);
  if (format == "hdf5") return open_hdf5_source(*storage, o.root, split, o.name, classes, e.stats);
  throw RuntimeError("data set '" + o.name + "': the registry lists format '" + format +
                     "' but open_split has no reader for it (src/data/datasets.cpp)");
}

DataSplits open_dataset(const DataOptions& options) {
  DataSplits s;
  s.train = open_split(options, Split::train);
  s.test = open_split(options, Split::test);
  return s;
}

std::vector<std::string> dataset_names() {
  std::vector<std::string> names;
  for (const auto& e : registry()) names.push_back(e.name);
  return names;
}

std::vector<std::string> dataset_format_names() {
  std::vector<std::string> names;
  for (const auto& e : registry())
    for (const auto& f : e.formats)
      if (std::find(names.begin(), names.end(), f) == names.end()) names.push_back(f);
  return names;
}

std::vector<std::string> dataset_formats(const std::string& name) { return entry(name).formats; }

std::vector<std::string> dataset_class_names(const std::string& name) { return entry(name).classes; }

}  // namespace ts
