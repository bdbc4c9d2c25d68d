// Writes one split of a data set as an `hdf5` file (the layout hdf5_source.h reads; docs/data.md
// "Formats: hdf5"), for `trainscale data convert --format hdf5`.
#pragma once

#include <cstdint>
#include <string>

#include "data/sample_source.h"

namespace ts {

struct Hdf5WriteOptions {
  std::string compression = "none";  // none | gzip (deflate level 4) | lz4 (only if the HDF5 build has the filter)
  int64_t chunk_samples = 0;         // samples per chunk; 0: as many as fill about 64 KiB (at least 1)
};

// Writes samples [0, count) of `source` (read_pixels) to `path` (through a temporary name renamed
// when complete, core/file_io.h AtomicFile): /images uint8 (count,C,H,W) chunked (chunk_samples,C,H,W) with attribute
// layout = "NCHW", /labels int32 (count), both with a Fletcher-32 checksum on every chunk, and
// root attributes chunk_samples, compression and checksums = "fletcher32".
// Throws ConfigError for an unknown or unavailable compression (lz4 needs H5Zfilter_avail), RuntimeError naming the file
// and dataset for a failed HDF5 call.
void write_hdf5_split(const std::string& path, const SampleSource& source, int64_t count,
                      const Hdf5WriteOptions& options);

}  // namespace ts
