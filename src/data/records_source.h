// `records` shards as a SampleSource (docs/data.md "Formats: records"; the bytes on disk:
// records_format.h): `<root>/<split>-NNNNN-of-MMMMM.rec` with split train or test, each with
// its index `<shard>.idx` or without one. Sample i is the i-th record over the shards in
// shard order. With an index a shard opens with two small reads (its first and last frame
// headers must agree with the index); without one the reader walks the shard's frame headers
// once at open (a 12-byte read per record, each length CRC checked) to find the offsets. Every
// read() is one read of the whole frame, whose length and CRCs are checked, so a corrupt
// record, a truncated shard or an index that disagrees with its shard is a RuntimeError naming
// the shard and the record number. With a shuffle buffer (dataset.shuffle_buffer > 0) the source
// gives the loader its epoch order (shuffle_buffer_order below) instead of a full shuffle.
#pragma once

#include <memory>
#include <string>
#include <vector>

#include "data/image_transform.h"
#include "data/pixel_normaliser.h"
#include "data/sample_source.h"
#include "data/storage.h"

namespace ts {

// The shuffle-buffer order of an epoch (shuffle_buffer > 0; docs/data.md): the shards in an
// order drawn from (seed, epoch), their records streamed in turn through a buffer of
// `shuffle_buffer` samples; each next record replaces a uniformly drawn one of the buffer, which
// is emitted; at the end the buffer is emitted in random order. Position p of the epoch then
// holds a record among the first p + shuffle_buffer of the stream, so the loader reads within a
// window of the shards as it goes, and the order differs from the full shuffle of every other
// format (and from records with shuffle_buffer 0). `shard_sizes` are the records per shard.
std::vector<int64_t> shuffle_buffer_order(const std::vector<int64_t>& shard_sizes, int64_t shuffle_buffer,
                                          uint64_t seed, int64_t epoch);

// Opens one split; every record must hold a sample of the same (C,H,W) shape and a label in
// [0, classes). `name` is the data set's name for describe(). Throws RuntimeError naming the
// directory when it holds no shard of the split or an incomplete set, and naming the shard
// (and record) for a damaged shard or index.
std::unique_ptr<SampleSource> open_records_source(const Storage& storage, const std::string& root, Split split,
                                                  const std::string& name, int64_t classes,
                                                  const Normalisation& stats, int64_t shuffle_buffer = 0);

// Records of images of any size (an ImageFolder converted by `data convert --dataset
// imagefolder`: its JPEG files byte for byte): each record decoded to the model's channels and
// transformed (image_transform.h) to `sample`, as the jpeg_dir source does the same files.
struct RecordsImageOptions {
  Shape sample;                 // the model's input (C,H,W), C = 1 or 3
  ImageTransformKind transform = ImageTransformKind::centre_crop;
  Normalisation stats;          // per-channel statistics (0, 1 or C entries)
  int64_t classes = 0;          // labels must be in [0, classes)
  int64_t shuffle_buffer = 0;
};
std::unique_ptr<SampleSource> open_records_image_source(const Storage& storage, const std::string& root, Split split,
                                                        const std::string& name, const RecordsImageOptions& options);

// The class names of records of an ImageFolder (label i is line i of `<root>/classes.txt`, which
// convert writes); RuntimeError naming the file when it is missing or empty.
constexpr const char* kRecordsClassFile = "classes.txt";
std::vector<std::string> read_records_class_names(const Storage& storage, const std::string& root);

// "train" or "test": the split's name in shard and HDF5 file names.
std::string split_file_stem(Split split);

}  // namespace ts
