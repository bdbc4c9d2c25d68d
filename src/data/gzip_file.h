// gzip-compressed data files (Fashion-MNIST ships as .gz). gzip has no random access: sample k
// cannot be found without inflating everything before it. So a .gz file is inflated once, when
// the data set is opened, into memory, and served from there as a RandomAccessFile. This is the
// one place where a whole split is held in memory; its reads then measure decoding, not
// storage. Formats with random access (raw IDX, CIFAR batches) are read per sample instead.
#pragma once

#include <cstdint>
#include <memory>
#include <string>
#include <vector>

#include "data/storage.h"

namespace ts {

// True if `path` ends in ".gz".
bool is_gzip_path(const std::string& path);

// No limit on the inflated size (inflate_gzip's max_inflated_bytes).
constexpr int64_t kNoInflateLimit = -1;

// Inflates the whole gzip file (one member or several concatenated) into memory; the result's
// path() is the compressed file's, so later messages name the file on storage. Throws
// RuntimeError naming the file for a truncated or corrupt stream (zlib checks each member's
// CRC-32 and length), and for a stream that inflates to more than max_inflated_bytes: a caller
// that knows the size from a header passes it, so a damaged or hostile file cannot fill memory.
std::unique_ptr<RandomAccessFile> inflate_gzip(const RandomAccessFile& compressed,
                                               int64_t max_inflated_bytes = kNoInflateLimit);

// The first `bytes` inflated bytes (fewer if the stream is shorter), inflating no further: a
// header read before deciding whether the whole file is worth inflating. RuntimeError naming
// the file for corrupt data within them.
std::vector<uint8_t> read_gzip_head(const RandomAccessFile& compressed, int64_t bytes);

// The most bytes a gzip file of `compressed_bytes` can inflate to (deflate's limit is about
// 1032:1), to refuse a header that claims more before inflating anything.
int64_t gzip_max_inflated_bytes(int64_t compressed_bytes);

}  // namespace ts
