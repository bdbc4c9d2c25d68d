// `records` shards as a SampleSource (docs/data.md "Formats: records"; the bytes on disk:
// records_format.h): `<root>/<split>-NNNNN-of-MMMMM.rec` with split train or test, each with
// its index `<shard>.idx` or without one. Sample i is the i-th record over the shards in
// shard order. With an index a shard opens with two small reads (its first and last frame
// headers must agree with the index); without one the reader walks the shard's frame headers
// once at open (a 12-byte read per record, each length CRC checked) to find the offsets. Every
// read() is one read of the whole frame, whose length and CRCs are checked, so a corrupt
// record, a truncated shard or an index that disagrees with its shard is a RuntimeError naming
// the shard and the record number.
#pragma once

#include <memory>
#include <string>

#include "data/pixel_normaliser.h"
#include "data/sample_source.h"
#include "data/storage.h"

namespace ts {

// Opens one split; every record must hold a sample of the same (C,H,W) shape and a label in
// [0, classes). `name` is the data set's name for describe(). Throws RuntimeError naming the
// directory when it holds no shard of the split or an incomplete set, and naming the shard
// (and record) for a damaged shard or index.
std::unique_ptr<SampleSource> open_records_source(const Storage& storage, const std::string& root, Split split,
                                                  const std::string& name, int64_t classes,
                                                  const Normalisation& stats);

// "train" or "test": the split's name in shard and HDF5 file names.
std::string split_file_stem(Split split);

}  // namespace ts
