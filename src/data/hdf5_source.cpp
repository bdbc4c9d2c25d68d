// Hdf5Source (see hdf5_source.h): the file stays open; labels are read and checked at open
// (4 bytes per sample), images a chunk at a time into a shared cache.
#include "data/hdf5_source.h"

#include <hdf5.h>

#include <algorithm>
#include <cstring>
#include <list>
#include <map>
#include <filesystem>
#include <mutex>

#include "core/error.h"
#include "data/jpeg_codec.h"
#include "data/records_source.h"
#include "hdf5/hdf5_support.h"

namespace ts {
namespace {

using hdf5::check;
using hdf5::Id;

constexpr int64_t kMaxSamples = int64_t{1} << 26;       // ImageNet-21k has 14 M; bounds the labels' memory
constexpr int64_t kMaxSampleBytes = int64_t{1} << 28;   // 256 MiB
constexpr int64_t kReadBytes = 65536;                   // rows per read of a contiguous (unchunked) dataset

RuntimeError bad_dataset(const std::string& file, const std::string& dataset, const std::string& what) {
  return RuntimeError("HDF5 file " + file + ", dataset " + dataset + ": " + what +
                      "; the hdf5 format needs /images uint8 (N,C,H,W) and /labels integer (N) (docs/data.md "
                      "\"Formats: hdf5\"); convert the data set with `trainscale data convert --format hdf5`");
}

// The string attribute `name` of `object`, or `fallback` when it has none.
std::string string_attribute(hid_t object, const char* name, const std::string& fallback, const std::string& file,
                             const std::string& where) {
  if (check(H5Aexists(object, name), "H5Aexists", file, where) <= 0) return fallback;
  Id attr(check(H5Aopen(object, name, H5P_DEFAULT), "H5Aopen", file, where), H5Aclose);
  Id type(check(H5Aget_type(attr), "H5Aget_type", file, where), H5Tclose);
  if (H5Tget_class(type) != H5T_STRING) throw bad_dataset(file, where, std::string("attribute ") + name + " is not a string");
  // Variable-length strings live in the file's global heap, whose reader in libhdf5 1.10 loops
  // forever on some damaged heaps (found by the hdf5 fuzz target): only fixed-length ones are read.
  if (check(H5Tis_variable_str(type), "H5Tis_variable_str", file, where) > 0)
    throw bad_dataset(file, where, std::string("attribute ") + name + " is a variable-length string; write it as a "
                      "fixed-length one (h5py: attrs['" + name + "'] = numpy.bytes_('NHWC'))");
  Id mem(check(H5Tcopy(H5T_C_S1), "H5Tcopy", file, where), H5Tclose);
  const H5T_cset_t cset = H5Tget_cset(type);  // ASCII and UTF-8 strings do not convert into each other
  check(H5Tset_cset(mem, cset == H5T_CSET_ERROR ? H5T_CSET_ASCII : cset), "H5Tset_cset", file, where);
  const size_t size = H5Tget_size(type);
  if (size == 0 || size > 256) throw bad_dataset(file, where, std::string("attribute ") + name + " has an odd size");
  // One byte more than stored: a null-padded string of `size` characters (h5py's numpy.bytes_)
  // then converts to a null-terminated one without losing its last character.
  check(H5Tset_size(mem, size + 1), "H5Tset_size", file, where);
  std::string value(size + 1, '\0');
  check(H5Aread(attr, mem, value.data()), "H5Aread", file, where);
  return value.substr(0, value.find('\0'));
}

// The dataset's dims; checks its rank and that its type is an integer of at most `max_size` bytes
// (unsigned when `must_be_unsigned`).
std::vector<hsize_t> integer_dims(hid_t dset, int rank, size_t max_size, bool must_be_unsigned, const std::string& file,
                                  const std::string& name) {
  Id type(check(H5Dget_type(dset), "H5Dget_type", file, name), H5Tclose);
  const size_t size = H5Tget_size(type);
  if (H5Tget_class(type) != H5T_INTEGER || size == 0 || size > max_size ||
      (must_be_unsigned && H5Tget_sign(type) != H5T_SGN_NONE))
    throw bad_dataset(file, name, std::string("wrong dtype (expected ") + (must_be_unsigned ? "uint8" : "uint8 or int32") + ")");
  Id space(check(H5Dget_space(dset), "H5Dget_space", file, name), H5Sclose);
  const int got = check(H5Sget_simple_extent_ndims(space), "H5Sget_simple_extent_ndims", file, name);
  if (got != rank)
    throw bad_dataset(file, name, "wrong shape: " + std::to_string(got) + " dimensions, expected " + std::to_string(rank));
  std::vector<hsize_t> dims(static_cast<size_t>(rank));
  check(H5Sget_simple_extent_dims(space, dims.data(), nullptr), "H5Sget_simple_extent_dims", file, name);
  return dims;
}

struct ImageLayout {
  int64_t count = 0;
  Shape chw;
  bool nhwc = false;
  int64_t chunk_rows = 1;  // samples per cache entry (the dataset's chunk along N)
  int64_t file_chunk_rows = 0;  // the dataset's own chunk along N (0: contiguous)
  std::string storage;     // "chunks of K samples, gzip" ... for describe()
};

// Whether `dset` carries HDF5's Fletcher-32 filter (a checksum on every chunk, checked by
// every read).
bool has_fletcher32(hid_t dset, const std::string& file, const std::string& name) {
  Id plist(check(H5Dget_create_plist(dset), "H5Dget_create_plist", file, name), H5Pclose);
  const int filters = check(H5Pget_nfilters(plist), "H5Pget_nfilters", file, name);
  for (int i = 0; i < filters; ++i) {
    unsigned flags = 0, config = 0;
    size_t nelmts = 0;
    if (H5Pget_filter2(plist, static_cast<unsigned>(i), &flags, &nelmts, nullptr, 0, nullptr, &config) ==
        H5Z_FILTER_FLETCHER32)
      return true;
  }
  return false;
}

// H5Dread of `dset` (all of it, or the `file_space` selection into `memory`), a RuntimeError on
// failure; one that HDF5 fails because a chunk's bytes no longer match their Fletcher-32
// checksum says so, naming `what` (the dataset and its samples or chunk).
void read_checked(hid_t dset, hid_t type, hid_t memory, hid_t file_space, void* out, const std::string& file,
                  const std::string& what) {
  if (H5Dread(dset, type, memory, file_space, H5P_DEFAULT, out) >= 0) return;
  bool checksum = false;
  H5Ewalk2(H5E_DEFAULT, H5E_WALK_UPWARD,
           [](unsigned, const H5E_error2_t* e, void* found) -> herr_t {
             if (e->desc && std::strstr(e->desc, "checksum")) *static_cast<bool*>(found) = true;
             return 0;
           },
           &checksum);
  if (!checksum) hdf5::fail_call("H5Dread", file, what);
  hdf5::take_error_stack();
  throw RuntimeError("HDF5 file " + file + ", " + what + ": the stored bytes do not match their Fletcher-32 "
                     "checksum: the file is damaged (a flipped bit on the disk or in a copy); convert the data set "
                     "again with `trainscale data convert --format hdf5`");
}

ImageLayout image_layout(hid_t images, const std::string& file) {
  const std::string name = "/images";
  const std::vector<hsize_t> d = integer_dims(images, 4, 1, true, file, name);
  ImageLayout l;
  const std::string layout = string_attribute(images, "layout", "NCHW", file, name);
  if (layout != "NCHW" && layout != "NHWC")
    throw bad_dataset(file, name, "attribute layout is '" + layout + "', accepted: NCHW, NHWC");
  l.nhwc = layout == "NHWC";
  l.count = static_cast<int64_t>(d[0]);
  l.chw = l.nhwc ? Shape{static_cast<int64_t>(d[3]), static_cast<int64_t>(d[1]), static_cast<int64_t>(d[2])}
                 : Shape{static_cast<int64_t>(d[1]), static_cast<int64_t>(d[2]), static_cast<int64_t>(d[3])};
  for (hsize_t v : d)
    if (v == 0 || v > static_cast<hsize_t>(kMaxSampleBytes))
      throw bad_dataset(file, name, "wrong shape: a dimension is 0 or implausibly large");
  if (l.count > kMaxSamples || l.chw.numel() > kMaxSampleBytes)
    throw bad_dataset(file, name, "wrong shape: " + std::to_string(l.count) + " samples of " + l.chw.str() +
                                      " is more than this reader accepts");
  Id plist(check(H5Dget_create_plist(images), "H5Dget_create_plist", file, name), H5Pclose);
  if (H5Pget_layout(plist) == H5D_CHUNKED) {
    hsize_t chunk[4] = {0, 0, 0, 0};
    check(H5Pget_chunk(plist, 4, chunk), "H5Pget_chunk", file, name);
    l.chunk_rows = std::max<int64_t>(1, static_cast<int64_t>(chunk[0]));
    l.file_chunk_rows = l.chunk_rows;
    l.storage = "chunks of " + std::to_string(l.chunk_rows) + " samples";
  } else {
    l.chunk_rows = std::max<int64_t>(1, kReadBytes / l.chw.numel());
    l.storage = "contiguous, read " + std::to_string(l.chunk_rows) + " samples at a time";
  }
  l.chunk_rows = std::min(l.chunk_rows, std::max<int64_t>(1, kHdf5ChunkCacheBytes / 4 / l.chw.numel()));
  const int filters = check(H5Pget_nfilters(plist), "H5Pget_nfilters", file, name);
  for (int i = 0; i < filters; ++i) {
    unsigned flags = 0, config = 0;
    size_t nelmts = 0;
    char filter_name[64] = {0};
    H5Z_filter_t id = H5Pget_filter2(plist, static_cast<unsigned>(i), &flags, &nelmts, nullptr, sizeof filter_name,
                                     filter_name, &config);
    check(id, "H5Pget_filter2", file, name);
    l.storage += std::string(", ") + (id == H5Z_FILTER_DEFLATE      ? "gzip"
                                      : id == hdf5::kLz4Filter       ? "lz4"
                                      : id == H5Z_FILTER_FLETCHER32 ? "Fletcher-32 checksums"
                                                                     : filter_name);
  }
  return l;
}

// Every label, read once at open and range-checked.
std::vector<int32_t> read_labels(hid_t file_id, int64_t count, int64_t classes, const std::string& file) {
  const std::string name = "/labels";
  if (check(H5Lexists(file_id, "labels", H5P_DEFAULT), "H5Lexists", file, name) <= 0)
    throw bad_dataset(file, name, "missing");
  Id labels(check(H5Dopen2(file_id, "labels", H5P_DEFAULT), "H5Dopen2", file, name), H5Dclose);
  const std::vector<hsize_t> d = integer_dims(labels, 1, 4, false, file, name);
  if (static_cast<int64_t>(d[0]) != count)
    throw bad_dataset(file, name, "wrong shape: " + std::to_string(d[0]) + " labels for " + std::to_string(count) + " images");
  std::vector<int32_t> values(static_cast<size_t>(count));
  read_checked(labels, H5T_NATIVE_INT32, H5S_ALL, H5S_ALL, values.data(), file, "dataset " + name);
  for (size_t i = 0; i < values.size(); ++i)
    if (values[i] < 0 || values[i] >= classes)
      throw bad_dataset(file, name, "label " + std::to_string(values[i]) + " at index " + std::to_string(i) +
                                        " is out of range 0.." + std::to_string(classes - 1));
  return values;
}

// Serialises this source's HDF5 calls and the cache; the library (thread-safe build) would
// serialise the calls anyway, the cache must not read one chunk twice.
std::mutex& hdf5_read_mutex() {
  static std::mutex m;
  return m;
}

class Hdf5Source final : public SampleSource {
 public:
  Hdf5Source(Id file, std::string path, const std::string& name, int64_t classes, const Normalisation& stats)
      : file_(std::move(file)), path_(std::move(path)), name_(name) {
    if (check(H5Lexists(file_, "images", H5P_DEFAULT), "H5Lexists", path_, "/images") <= 0)
      throw bad_dataset(path_, "/images", "missing");
    images_ = Id(check(H5Dopen2(file_, "images", H5P_DEFAULT), "H5Dopen2", path_, "/images"), H5Dclose);
    layout_ = image_layout(images_, path_);
    labels_ = read_labels(file_, layout_.count, classes, path_);
    spec_ = {layout_.chw, classes, 0};
    normaliser_ = std::make_unique<PixelNormaliser>(stats, layout_.chw[0], layout_.chw[1] * layout_.chw[2]);
  }

  const SampleSpec& spec() const override { return spec_; }
  int64_t count() const override { return layout_.count; }
  bool prefers_sequential() const override { return true; }
  std::string describe() const override {
    return "hdf5 " + name_ + " " + path_ + " (" + (layout_.nhwc ? "NHWC" : "NCHW") + ", " + layout_.storage + "), " +
           std::to_string(layout_.count) + " samples of " + spec_.sample.str();
  }

  void read(int64_t index, float* image, int32_t* label, float*) const override {
    std::vector<uint8_t> pixels(static_cast<size_t>(spec_.sample.numel()));
    read_pixels(index, pixels.data(), label);
    normaliser_->apply(pixels.data(), image);
  }

  void read_pixels(int64_t index, uint8_t* pixels, int32_t* label) const override {
    const int64_t chunk = index / layout_.chunk_rows, row = index - chunk * layout_.chunk_rows;
    const std::shared_ptr<const std::vector<uint8_t>> rows = cached_chunk(chunk);
    const int64_t numel = spec_.sample.numel();
    const uint8_t* src = rows->data() + row * numel;
    if (layout_.nhwc)  // src (H,W,C) -> pixels (C,H,W)
      planes_from_pixels(src, spec_.sample[0], spec_.sample[1], spec_.sample[2], pixels);
    else
      std::memcpy(pixels, src, static_cast<size_t>(numel));
    *label = labels_[static_cast<size_t>(index)];
  }

 private:
  std::shared_ptr<const std::vector<uint8_t>> cached_chunk(int64_t chunk) const;
  std::shared_ptr<const std::vector<uint8_t>> read_chunk(int64_t chunk) const;

  Id file_, images_;
  std::string path_, name_;
  ImageLayout layout_;
  std::vector<int32_t> labels_;
  SampleSpec spec_;
  std::unique_ptr<PixelNormaliser> normaliser_;
  // The cache: decoded chunks by number, least recently used first in lru_.
  mutable std::map<int64_t, std::shared_ptr<const std::vector<uint8_t>>> chunks_;
  mutable std::list<int64_t> lru_;
  mutable int64_t cached_bytes_ = 0;
};

std::shared_ptr<const std::vector<uint8_t>> Hdf5Source::cached_chunk(int64_t chunk) const {
  std::lock_guard<std::mutex> lock(hdf5_read_mutex());
  auto it = chunks_.find(chunk);
  if (it != chunks_.end()) {
    lru_.remove(chunk);
    lru_.push_back(chunk);
    return it->second;
  }
  auto rows = read_chunk(chunk);
  while (!lru_.empty() && cached_bytes_ + static_cast<int64_t>(rows->size()) > kHdf5ChunkCacheBytes) {
    cached_bytes_ -= static_cast<int64_t>(chunks_[lru_.front()]->size());
    chunks_.erase(lru_.front());
    lru_.pop_front();
  }
  chunks_[chunk] = rows;
  lru_.push_back(chunk);
  cached_bytes_ += static_cast<int64_t>(rows->size());
  return rows;
}

// Rows [chunk * chunk_rows, ...) of /images as stored (NCHW or NHWC); called under the mutex.
std::shared_ptr<const std::vector<uint8_t>> Hdf5Source::read_chunk(int64_t chunk) const {
  hdf5::QuietErrors quiet;
  const std::string name = "/images";
  const int64_t first = chunk * layout_.chunk_rows;
  const int64_t rows = std::min(layout_.chunk_rows, layout_.count - first);
  auto data = std::make_shared<std::vector<uint8_t>>(static_cast<size_t>(rows * spec_.sample.numel()));
  Id space(check(H5Dget_space(images_), "H5Dget_space", path_, name), H5Sclose);
  hsize_t dims[4];
  check(H5Sget_simple_extent_dims(space, dims, nullptr), "H5Sget_simple_extent_dims", path_, name);
  const hsize_t start[4] = {static_cast<hsize_t>(first), 0, 0, 0};
  const hsize_t count[4] = {static_cast<hsize_t>(rows), dims[1], dims[2], dims[3]};
  check(H5Sselect_hyperslab(space, H5S_SELECT_SET, start, nullptr, count, nullptr), "H5Sselect_hyperslab", path_, name);
  Id memory(check(H5Screate_simple(4, count, nullptr), "H5Screate_simple", path_, name), H5Sclose);
  const std::string file_chunk = layout_.file_chunk_rows > 0
                                     ? " (chunk " + std::to_string(first / layout_.file_chunk_rows) + ")"
                                     : std::string();
  read_checked(images_, H5T_NATIVE_UINT8, memory, space, data->data(), path_,
               "dataset " + name + " samples " + std::to_string(first) + ".." + std::to_string(first + rows - 1) +
                   file_chunk);
  return data;
}

std::unique_ptr<SampleSource> open_file(hid_t fapl, const std::string& path, const std::string& name, int64_t classes,
                                        const Normalisation& stats) {
  std::error_code ec;  // HDF5's open(2) of a FIFO would wait for a writer for ever
  if (std::filesystem::exists(path, ec) && !std::filesystem::is_regular_file(path, ec))
    throw RuntimeError("data file " + path + ": not a regular file (a directory, FIFO, device or socket)");
  hdf5::QuietErrors quiet;
  std::lock_guard<std::mutex> lock(hdf5_read_mutex());
  Id file(H5Fopen(path.c_str(), H5F_ACC_RDONLY, fapl), H5Fclose);
  if (file < 0) {
    try {
      hdf5::fail_call("H5Fopen", path, "/");
    } catch (const RuntimeError& e) {
      throw RuntimeError(std::string(e.what()) + "; the file is damaged or not an HDF5 file: convert the data set "
                         "again with `trainscale data convert --format hdf5`");
    }
  }
  return std::make_unique<Hdf5Source>(std::move(file), path, name, classes, stats);
}

}  // namespace

std::unique_ptr<SampleSource> open_hdf5_source(const Storage& storage, const std::string& root, Split split,
                                               const std::string& name, int64_t classes, const Normalisation& stats) {
  if (storage.name() == "blob")
    throw ConfigError("dataset.format hdf5 reads through the HDF5 library's POSIX driver; dataset.storage blob is "
                      "not a POSIX path: use records (or stage the data with dataset.stage: node_local)");
  const std::string path = join_storage_path(root, split_file_stem(split) + ".h5");
  if (!storage.exists(path))
    throw RuntimeError("HDF5 file " + path + " not found" +
                       (storage.exists(root) ? std::string() : " (directory " + root + " does not exist)") +
                       "; make it with `trainscale data convert --format hdf5` and set dataset.root to its directory");
  return open_file(H5P_DEFAULT, path, name, classes, stats);
}

std::unique_ptr<SampleSource> open_hdf5_file(const std::string& path, const std::string& name, int64_t classes,
                                             const Normalisation& stats) {
  return open_file(H5P_DEFAULT, path, name, classes, stats);
}

bool hdf5_file_has_checksums(const std::string& path) {
  hdf5::QuietErrors quiet;
  std::lock_guard<std::mutex> lock(hdf5_read_mutex());
  Id file(check(H5Fopen(path.c_str(), H5F_ACC_RDONLY, H5P_DEFAULT), "H5Fopen", path, "/"), H5Fclose);
  for (const char* name : {"images", "labels"}) {
    Id dset(check(H5Dopen2(file, name, H5P_DEFAULT), "H5Dopen2", path, name), H5Dclose);
    if (!has_fletcher32(dset, path, name)) return false;
  }
  return true;
}

std::unique_ptr<SampleSource> open_hdf5_image(const std::vector<uint8_t>& image, const std::string& label,
                                              int64_t classes, const Normalisation& stats) {
  hdf5::QuietErrors quiet;
  Id fapl(check(H5Pcreate(H5P_FILE_ACCESS), "H5Pcreate", label, "/"), H5Pclose);
  check(H5Pset_fapl_core(fapl, 1 << 20, 0), "H5Pset_fapl_core", label, "/");
  check(H5Pset_file_image(fapl, const_cast<uint8_t*>(image.data()), image.size()), "H5Pset_file_image", label, "/");
  return open_file(fapl, label, label, classes, stats);
}

}  // namespace ts
