// The hdf5 split writer (see hdf5_writer.h): a chunk of samples is gathered in memory and
// written with one H5Dwrite, the labels once at the end.
#include "data/hdf5_writer.h"

#include <hdf5.h>

#include <algorithm>
#include <cstdio>

#include "core/error.h"
#include "core/file_io.h"
#include "hdf5/hdf5_support.h"

namespace ts {
namespace {

using hdf5::check;
using hdf5::Id;
using hdf5::kLz4Filter;

constexpr unsigned kGzipLevel = 4;
constexpr int64_t kTargetChunkBytes = 65536;
constexpr hsize_t kLabelChunk = 16384;  // labels per chunk of /labels (64 KiB)

void write_string_attribute(hid_t object, const char* name, const std::string& value, const std::string& file) {
  Id type(check(H5Tcopy(H5T_C_S1), "H5Tcopy", file, name), H5Tclose);
  check(H5Tset_size(type, std::max<size_t>(1, value.size())), "H5Tset_size", file, name);
  Id space(check(H5Screate(H5S_SCALAR), "H5Screate", file, name), H5Sclose);
  Id attr(check(H5Acreate2(object, name, type, space, H5P_DEFAULT, H5P_DEFAULT), "H5Acreate2", file, name), H5Aclose);
  check(H5Awrite(attr, type, value.c_str()), "H5Awrite", file, name);
}

void write_int_attribute(hid_t object, const char* name, int64_t value, const std::string& file) {
  Id space(check(H5Screate(H5S_SCALAR), "H5Screate", file, name), H5Sclose);
  Id attr(check(H5Acreate2(object, name, H5T_STD_I64LE, space, H5P_DEFAULT, H5P_DEFAULT), "H5Acreate2", file, name),
          H5Aclose);
  check(H5Awrite(attr, H5T_NATIVE_INT64, &value), "H5Awrite", file, name);
}

// The dataset-creation property list of /images: chunked along N, compressed as asked, and
// every chunk checksummed (Fletcher-32, after compression: HDF5 refuses to read a chunk whose
// stored bytes changed, so a flipped byte is an error, not a silently different image).
Id image_plist(const hsize_t chunk[4], const std::string& compression, const std::string& file) {
  Id plist(check(H5Pcreate(H5P_DATASET_CREATE), "H5Pcreate", file, "/images"), H5Pclose);
  check(H5Pset_chunk(plist, 4, chunk), "H5Pset_chunk", file, "/images");
  check(H5Pset_obj_track_times(plist, 0), "H5Pset_obj_track_times", file, "/images");  // same bytes every time
  if (compression == "gzip") check(H5Pset_deflate(plist, kGzipLevel), "H5Pset_deflate", file, "/images");
  if (compression == "lz4")
    check(H5Pset_filter(plist, kLz4Filter, H5Z_FLAG_MANDATORY, 0, nullptr), "H5Pset_filter", file, "/images");
  check(H5Pset_fletcher32(plist), "H5Pset_fletcher32", file, "/images");
  return plist;
}

// /labels int32 (count), chunked so that it can carry the same checksum as /images.
void write_labels(hid_t file, const std::vector<int32_t>& labels, const std::string& tmp) {
  const hsize_t n[1] = {static_cast<hsize_t>(labels.size())};
  const hsize_t chunk[1] = {std::min<hsize_t>(n[0], kLabelChunk)};
  Id space(check(H5Screate_simple(1, n, nullptr), "H5Screate_simple", tmp, "/labels"), H5Sclose);
  Id plist(check(H5Pcreate(H5P_DATASET_CREATE), "H5Pcreate", tmp, "/labels"), H5Pclose);
  check(H5Pset_obj_track_times(plist, 0), "H5Pset_obj_track_times", tmp, "/labels");
  check(H5Pset_chunk(plist, 1, chunk), "H5Pset_chunk", tmp, "/labels");
  check(H5Pset_fletcher32(plist), "H5Pset_fletcher32", tmp, "/labels");
  Id set(check(H5Dcreate2(file, "labels", H5T_STD_I32LE, space, H5P_DEFAULT, plist, H5P_DEFAULT), "H5Dcreate2", tmp,
               "/labels"),
         H5Dclose);
  check(H5Dwrite(set, H5T_NATIVE_INT32, H5S_ALL, H5S_ALL, H5P_DEFAULT, labels.data()), "H5Dwrite", tmp, "/labels");
}

// Writes samples [0, count) chunk by chunk into /images and returns their labels.
std::vector<int32_t> write_images(hid_t images, const SampleSource& source, int64_t count, int64_t chunk_rows,
                                  const std::string& file) {
  const Shape chw = source.spec().sample;
  std::vector<int32_t> labels(static_cast<size_t>(count));
  std::vector<uint8_t> rows(static_cast<size_t>(chunk_rows * chw.numel()));
  Id file_space(check(H5Dget_space(images), "H5Dget_space", file, "/images"), H5Sclose);
  for (int64_t first = 0; first < count; first += chunk_rows) {
    const int64_t n = std::min(chunk_rows, count - first);
    for (int64_t i = 0; i < n; ++i)
      source.read_pixels(first + i, rows.data() + i * chw.numel(), &labels[static_cast<size_t>(first + i)]);
    const hsize_t start[4] = {static_cast<hsize_t>(first), 0, 0, 0};
    const hsize_t extent[4] = {static_cast<hsize_t>(n), static_cast<hsize_t>(chw[0]), static_cast<hsize_t>(chw[1]),
                               static_cast<hsize_t>(chw[2])};
    check(H5Sselect_hyperslab(file_space, H5S_SELECT_SET, start, nullptr, extent, nullptr), "H5Sselect_hyperslab",
          file, "/images");
    Id memory(check(H5Screate_simple(4, extent, nullptr), "H5Screate_simple", file, "/images"), H5Sclose);
    check(H5Dwrite(images, H5T_NATIVE_UINT8, memory, file_space, H5P_DEFAULT, rows.data()), "H5Dwrite", file, "/images");
  }
  return labels;
}

}  // namespace

void write_hdf5_split(const std::string& path, const SampleSource& source, int64_t count,
                      const Hdf5WriteOptions& options) {
  const bool lz4 = H5Zfilter_avail(kLz4Filter) > 0;
  if (options.compression != "none" && options.compression != "gzip" && !(lz4 && options.compression == "lz4"))
    throw ConfigError("--compression '" + options.compression + "' is not one this HDF5 build can write; accepted: none, gzip" +
                      (lz4 ? ", lz4" : " (lz4 needs the HDF5 LZ4 filter plugin, id 32004, which this "
                                                   "HDF5 library does not find)"));
  const Shape chw = source.spec().sample;
  if (chw.rank() != 3 || count < 1)
    throw RuntimeError("hdf5: cannot write " + std::to_string(count) + " samples of shape " + chw.str() + " to " + path);
  const int64_t chunk_rows = std::min(count, options.chunk_samples > 0 ? options.chunk_samples
                                                                       : std::max<int64_t>(1, kTargetChunkBytes / chw.numel()));
  AtomicFile atomic(path);
  const std::string& tmp = atomic.temp_path();
  {
    hdf5::QuietErrors quiet;
    Id file(check(H5Fcreate(tmp.c_str(), H5F_ACC_TRUNC, H5P_DEFAULT, H5P_DEFAULT), "H5Fcreate", tmp, "/"), H5Fclose);
    const hsize_t dims[4] = {static_cast<hsize_t>(count), static_cast<hsize_t>(chw[0]), static_cast<hsize_t>(chw[1]),
                             static_cast<hsize_t>(chw[2])};
    const hsize_t chunk[4] = {static_cast<hsize_t>(chunk_rows), dims[1], dims[2], dims[3]};
    Id space(check(H5Screate_simple(4, dims, nullptr), "H5Screate_simple", tmp, "/images"), H5Sclose);
    Id plist = image_plist(chunk, options.compression, tmp);
    Id images(check(H5Dcreate2(file, "images", H5T_STD_U8LE, space, H5P_DEFAULT, plist, H5P_DEFAULT), "H5Dcreate2", tmp,
                    "/images"),
              H5Dclose);
    write_string_attribute(images, "layout", "NCHW", tmp);
    write_labels(file, write_images(images, source, count, chunk_rows, tmp), tmp);
    write_int_attribute(file, "chunk_samples", chunk_rows, tmp);
    write_string_attribute(file, "compression", options.compression, tmp);
    write_string_attribute(file, "checksums", "fletcher32", tmp);
    check(H5Fflush(file, H5F_SCOPE_GLOBAL), "H5Fflush", tmp, "/");
  }
  atomic.commit();
}

}  // namespace ts
