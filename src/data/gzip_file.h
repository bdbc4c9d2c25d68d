// gzip-compressed data files (Fashion-MNIST ships as .gz). gzip has no random access: sample k
// cannot be found without inflating everything before it. So a .gz file is inflated once, when
// the data set is opened, into memory, and served from there as a RandomAccessFile. This is the
// one place where a whole split is held in memory; its reads then measure decoding, not
// storage. Formats with random access (raw IDX, CIFAR batches) are read per sample instead.
#pragma once

#include <memory>
#include <string>

#include "data/storage.h"

namespace ts {

// True if `path` ends in ".gz".
bool is_gzip_path(const std::string& path);

// Inflates the whole gzip file (one member or several concatenated) into memory; the result's
// path() is the compressed file's, so later messages name the file on storage. Throws
// RuntimeError naming the file for a truncated or corrupt stream.
std::unique_ptr<RandomAccessFile> inflate_gzip(const RandomAccessFile& compressed);

}  // namespace ts
