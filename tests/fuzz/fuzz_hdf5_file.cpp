// The hdf5 fuzz target (see fuzz_targets.h). The input describes a file, which is written here
// through the HDF5 library into an in-memory file image and then opened by the reader: every
// shape, dtype, layout attribute, chunking, compression and label value a user's file can have
// reaches the reader's checks. Raw bytes as the file image fuzzed libhdf5 1.10's own parser
// instead, which crashes and hangs on damaged metadata (docs/reliability.md): not this
// project's code, and not fixable here.
#include <hdf5.h>

#include <algorithm>
#include <string>
#include <vector>

#include "core/error.h"
#include "data/hdf5_source.h"
#include "fuzz_targets.h"

namespace ts::fuzz {
namespace {

// Reads the input front to back; past its end every byte is 0.
struct Bytes {
  const uint8_t* data;
  size_t size, at = 0;
  uint8_t next() { return at < size ? data[at++] : 0; }
};

// An HDF5 id closed on scope exit (the harness's own; failures just end the input).
struct Held {
  hid_t id;
  herr_t (*close)(hid_t);
  ~Held() {
    if (id >= 0) close(id);
  }
};

const hid_t kTypes[] = {H5T_STD_U8LE, H5T_STD_I8LE, H5T_STD_U16LE, H5T_IEEE_F32LE, H5T_STD_I32LE, H5T_STD_I64LE};

// How a chunked dataset is stored: gzip, Fletcher-32 checksums; `first_chunk`, when not null,
// gets the file address of its first chunk's stored bytes (to damage them).
struct ChunkFilters {
  bool gzip = false, fletcher32 = false;
  haddr_t* first_chunk = nullptr;
};

// One dataset `name` of type kTypes[type % 6] and `rank` dims from the input, filled from the input.
bool write_dataset(hid_t file, const char* name, Bytes& in, int rank, const hsize_t* dims, int chunk_rows,
                   const ChunkFilters& filters, const char* layout) {
  Held space{H5Screate_simple(rank, dims, nullptr), H5Sclose};
  Held plist{H5Pcreate(H5P_DATASET_CREATE), H5Pclose};
  if (space.id < 0 || plist.id < 0) return false;
  if (chunk_rows > 0) {
    hsize_t chunk[5];
    for (int i = 0; i < rank; ++i) chunk[i] = i == 0 ? std::min<hsize_t>(dims[0], chunk_rows) : dims[i];
    if (H5Pset_chunk(plist.id, rank, chunk) < 0 || (filters.gzip && H5Pset_deflate(plist.id, 1) < 0) ||
        (filters.fletcher32 && H5Pset_fletcher32(plist.id) < 0))
      return false;
  }
  const hid_t type = kTypes[in.next() % 6];
  Held set{H5Dcreate2(file, name, type, space.id, H5P_DEFAULT, plist.id, H5P_DEFAULT), H5Dclose};
  if (set.id < 0) return false;
  hsize_t count = 1;
  for (int i = 0; i < rank; ++i) count *= dims[i];
  std::vector<uint8_t> values(static_cast<size_t>(count));
  for (auto& v : values) v = in.next();
  if (H5Dwrite(set.id, H5T_NATIVE_UINT8, H5S_ALL, H5S_ALL, H5P_DEFAULT, values.data()) < 0) return false;
  if (filters.first_chunk && chunk_rows > 0) {
    hsize_t offset[5];
    unsigned mask = 0;
    hsize_t bytes = 0;
    Held file_space{H5Dget_space(set.id), H5Sclose};
    if (file_space.id < 0 || H5Fflush(file, H5F_SCOPE_GLOBAL) < 0 ||
        H5Dget_chunk_info(set.id, file_space.id, 0, offset, &mask, filters.first_chunk, &bytes) < 0 || bytes == 0)
      *filters.first_chunk = HADDR_UNDEF;
  }
  if (!layout) return true;
  Held str{H5Tcopy(H5T_C_S1), H5Tclose};
  Held scalar{H5Screate(H5S_SCALAR), H5Sclose};
  if (str.id < 0 || scalar.id < 0 || H5Tset_size(str.id, std::max<size_t>(1, std::string(layout).size())) < 0) return false;
  Held attr{H5Acreate2(set.id, "layout", str.id, scalar.id, H5P_DEFAULT, H5P_DEFAULT), H5Aclose};
  return attr.id >= 0 && H5Awrite(attr.id, str.id, layout) >= 0;
}

// The file the input describes, as an image; empty if HDF5 refused to write it.
std::vector<uint8_t> file_image(Bytes& in) {
  Held fapl{H5Pcreate(H5P_FILE_ACCESS), H5Pclose};
  if (fapl.id < 0 || H5Pset_fapl_core(fapl.id, 1 << 16, 0) < 0) return {};
  Held file{H5Fcreate("fuzz-image.h5", H5F_ACC_TRUNC, H5P_DEFAULT, fapl.id), H5Fclose};
  if (file.id < 0) return {};
  const uint8_t shape = in.next(), options = in.next();
  const int rank = 1 + shape % 5;                   // /images rank 1..5 (4 is right)
  hsize_t dims[5];
  for (int i = 0; i < rank; ++i) dims[i] = 1 + in.next() % 12;  // small: every sample is read
  const char* layouts[] = {nullptr, "NCHW", "NHWC", "CHWN", ""};
  const int chunk_rows = options & 0x0F;            // 0: contiguous
  haddr_t first_chunk = HADDR_UNDEF;
  const ChunkFilters image_filters{(options & 0x10) != 0, (options & 0x20) != 0,
                                   (options & 0x40) != 0 ? &first_chunk : nullptr};
  if ((shape & 0x20) == 0 &&
      !write_dataset(file.id, "images", in, rank, dims, chunk_rows, image_filters, layouts[(shape >> 3) % 5]))
    return {};
  // /labels: rank 1 or 2, count dims[0] - 1 .. dims[0] + 1.
  const uint8_t labels = in.next();
  hsize_t label_dims[2] = {std::max<hsize_t>(1, dims[0] + (labels % 3) - 1), 1};
  if ((labels & 0x80) == 0 &&
      !write_dataset(file.id, "labels", in, 1 + ((labels >> 2) & 1), label_dims, (labels >> 3) & 3,
                     ChunkFilters{false, (labels & 0x40) != 0, nullptr}, nullptr))
    return {};
  if (H5Fflush(file.id, H5F_SCOPE_GLOBAL) < 0) return {};
  const ssize_t size = H5Fget_file_image(file.id, nullptr, 0);
  if (size <= 0) return {};
  std::vector<uint8_t> image(static_cast<size_t>(size));
  if (H5Fget_file_image(file.id, image.data(), image.size()) != size) return {};
  // A byte of /images' first chunk flipped, as a disk or a copy would (never the metadata: a
  // damaged B-tree or heap is libhdf5's own trouble, see the top of this file).
  if (first_chunk != HADDR_UNDEF && first_chunk < image.size()) image[static_cast<size_t>(first_chunk)] ^= 0x5A;
  return image;
}

}  // namespace

// Input layout: a shape byte (/images' rank is 1 + shape % 5, its layout attribute
// (shape >> 3) % 5 of none, NCHW, NHWC, CHWN, ""; 0x20 set: no /images), an options
// byte (bits 0..3: chunk rows, 0 contiguous; bit 4: gzip; bit 5: Fletcher-32; bit 6: flip a byte
// of the first chunk), one byte per dim, the images' type byte (u8, i8, u16, f32, i32, i64) and
// values, a labels byte (bits 0..1: count - dims[0] + 1, bit 2: rank 2, bits 3..4: chunk rows,
// bit 6: Fletcher-32, bit 7: no /labels), their type byte and values.
void hdf5(const uint8_t* data, size_t size) {
  H5E_auto2_t func = nullptr;
  void* client = nullptr;
  H5Eget_auto2(H5E_DEFAULT, &func, &client);
  H5Eset_auto2(H5E_DEFAULT, nullptr, nullptr);
  Bytes in{data, size};
  const std::vector<uint8_t> image = file_image(in);
  H5Eset_auto2(H5E_DEFAULT, func, client);
  if (image.empty()) return;
  try {
    auto source = open_hdf5_image(image, "/fuzz/test.h5", 10, {{0.2860f}, {0.3530f}});
    std::vector<float> pixels(static_cast<size_t>(source->spec().sample.numel()));
    int32_t label = 0;
    for (int64_t i = 0; i < source->count(); ++i) source->read(i, pixels.data(), &label, nullptr);
  } catch (const ConfigError&) {
  } catch (const RuntimeError&) {
  }
}

}  // namespace ts::fuzz
