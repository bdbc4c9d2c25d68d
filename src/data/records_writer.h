// Writes one split of a data set as `records` shards with their index files (records_format.h,
// docs/data.md "Formats: records"), for `trainscale data convert --format records`.
#pragma once

#include <cstdint>
#include <functional>
#include <string>
#include <vector>

#include "data/records_format.h"
#include "data/sample_source.h"

namespace ts {

struct RecordsWriteOptions {
  int shards = 1;                                   // shard s holds samples [s*n/shards, (s+1)*n/shards)
  PayloadEncoding encoding = PayloadEncoding::raw;  // raw pixels or JPEG
  int jpeg_quality = 90;                            // JPEG payloads: encode_jpeg quality 1..100
};

// Writes samples [0, count) of `source` (read_pixels) as `<dir>/<split>-NNNNN-of-MMMMM.rec` (+ .idx),
// each through a temporary name renamed when complete (AtomicFile); returns the shard paths. Throws ConfigError
// for shards outside [1, count] or a quality outside [1, 100], RuntimeError naming the file for
// a failed write.
std::vector<std::string> write_records_split(const std::string& dir, Split split, const SampleSource& source,
                                             int64_t count, const RecordsWriteOptions& options);

// The payload of sample i (records_format.h: encode_sample_payload, encode_jpeg_file_payload).
using PayloadOf = std::function<std::vector<uint8_t>(int64_t)>;
// Writes the payloads of samples [0, count), in order, as the split's shards and index files, as
// write_records_split does; the writer of records of an ImageFolder's JPEG files.
std::vector<std::string> write_record_payloads(const std::string& dir, Split split, int64_t count, int shards,
                                               const PayloadOf& payload_of);

}  // namespace ts
