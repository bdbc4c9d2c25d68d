// `trainscale data convert` and `trainscale data inspect` (docs/data.md "Converting and
// inspecting"): a data set read through its SampleSources (read_pixels: the stored uint8
// pixels, not normalised floats) and written in another format; a converted directory or file
// described and checked record by record.
#pragma once

#include <cstdint>
#include <string>
#include <vector>

namespace ts {

struct ConvertOptions {
  std::string dataset = "fashion_mnist";  // a dataset_names() entry with stored images, or imagefolder
  std::string from;                       // directory of the source files (imagefolder: a jpeg_dir tree)
  std::string from_format;                // its format; empty: the data set's default
  std::string format;                     // records | hdf5 | jpeg_dir
  std::string out;                        // output directory (created)
  int shards = 1;                         // records: shards per split
  int jpeg_quality = 0;                   // jpeg_dir: 1..100 (0: 90); records: JPEG payloads if > 0, else raw
  std::string compression = "none";       // hdf5: none | gzip | lz4
  int64_t limit = 0;                      // > 0: the first `limit` samples of each split only
  double test_fraction = 0.1;             // imagefolder, ROOT/<class> layout: the share held out as test
};

struct ConvertedSplit {
  std::string split;                // train | test
  int64_t samples = 0;
  std::vector<std::string> files;   // written (jpeg_dir: the split's directory)
};

// Converts both splits. An ImageFolder (dataset imagefolder) becomes records whose payloads are
// its JPEG files byte for byte, in the jpeg_dir source's sample order, with the class names in
// `<out>/classes.txt`; its images keep their sizes (the reader transforms them). Throws ConfigError for a bad option (naming it and what is accepted),
// RuntimeError naming the file for a read or write error.
std::vector<ConvertedSplit> convert_dataset(const ConvertOptions& options);

// What inspect found: one line "key: value" per fact, in order.
struct InspectReport {
  std::vector<std::pair<std::string, std::string>> facts;
};

// Describes `path` (a records or hdf5 directory as convert writes it, one .rec shard, one .h5
// file or a jpeg_dir tree): format, samples, classes, shapes, shards and the SHA-256 of every
// file, reading every record (records, hdf5) or image (jpeg_dir) so that a damaged one is found.
// Throws RuntimeError naming the file (and record) on corruption, ConfigError when `path` holds
// no format it knows.
InspectReport inspect_data(const std::string& path);

}  // namespace ts
