// `hdf5` files as a SampleSource (docs/data.md "Formats: hdf5"): one file per split,
// `<root>/<split>.h5` (split train or test), holding
//   /images  uint8 (N,C,H,W), chunked along N (attribute layout = "NCHW", the default when
//            absent; "NHWC" files are accepted and transposed on read), any compression the
//            HDF5 library can decode (gzip; lz4 only with its plugin)
//   /labels  integer (N), uint8 or int32, each in [0, classes)
// read() serves a sample from a decoded copy of its whole chunk, kept in a cache of
// kHdf5ChunkCacheBytes shared by the loader threads: HDF5 decodes a chunk at a time anyway, and
// Debian's HDF5 (thread-safe build) runs one call at a time in the whole process, so threads
// mostly copy from memory instead of queueing for the library. Shape, dtype and label errors
// are RuntimeErrors naming the file and the dataset; so is a chunk whose bytes fail their
// Fletcher-32 checksum (HDF5 checks it on every read of a file that has them).
#pragma once

#include <memory>
#include <string>
#include <vector>

#include "data/pixel_normaliser.h"
#include "data/sample_source.h"
#include "data/storage.h"

namespace ts {

constexpr int64_t kHdf5ChunkCacheBytes = int64_t{64} << 20;

// Opens `<root>/<split>.h5` through the HDF5 library's own POSIX file driver: the storage must
// be a POSIX one (local, nfs, a staged copy); it is asked only whether the file exists.
std::unique_ptr<SampleSource> open_hdf5_source(const Storage& storage, const std::string& root, Split split,
                                               const std::string& name, int64_t classes, const Normalisation& stats);

// Opens one .h5 file by its path (the POSIX file system), as open_hdf5_source does (for inspect).
std::unique_ptr<SampleSource> open_hdf5_file(const std::string& path, const std::string& name, int64_t classes,
                                             const Normalisation& stats);

// Whether /images and /labels of the .h5 file carry Fletcher-32 checksums on every chunk (what
// `data convert --format hdf5` writes; files from before, or from elsewhere, may have none).
bool hdf5_file_has_checksums(const std::string& path);

// The same from a whole file held in memory (HDF5's core driver over a file image), for the
// fuzzer and tests; `label` names it in messages.
std::unique_ptr<SampleSource> open_hdf5_image(const std::vector<uint8_t>& image, const std::string& label,
                                              int64_t classes, const Normalisation& stats);

}  // namespace ts
