// Checked reads of HDF5 files (see hdf5_reader.h).
#include "metrics/hdf5_reader.h"

#include <hdf5.h>

#include <algorithm>
#include <cstring>
#include <filesystem>
#include <type_traits>
#include <utility>

#include "core/error.h"
#include "hdf5/hdf5_support.h"

namespace ts::h5 {
namespace {

using hdf5::QuietErrors;
using hdf5::Id;

[[noreturn]] void fail(const std::string& file, const std::string& what) {
  const std::string detail = hdf5::take_error_stack();
  throw RuntimeError("HDF5 file " + file + ": " + what + (detail.empty() ? "" : " (" + detail + ")"));
}

// Deflate cannot expand data by more than about 1032:1: a dataset that claims more than that
// from the file's bytes has a damaged header, and is refused before anything is allocated.
constexpr uint64_t kMaxExpansion = 1100;

}  // namespace

ReadFile ReadFile::open(const std::string& path) {
  // HDF5's open(2) of a FIFO waits for a writer for ever: only regular files are opened.
  std::error_code ec;
  if (std::filesystem::exists(path, ec) && !std::filesystem::is_regular_file(path, ec))
    throw RuntimeError("HDF5 file " + path + ": not a regular file (a directory, FIFO, device or socket); "
                       "remove or rename it");
  QuietErrors quiet;
  const hid_t id = H5Fopen(path.c_str(), H5F_ACC_RDONLY, H5P_DEFAULT);
  if (id < 0) fail(path, "cannot be opened as HDF5 (missing, not HDF5, or truncated)");
  return ReadFile(id, path);
}

ReadFile::~ReadFile() {
  if (id_ >= 0) H5Fclose(id_);
}

bool ReadFile::exists(const std::string& object) const {
  if (object == "/") return true;
  QuietErrors quiet;
  for (size_t end = object.find('/', 1);; end = object.find('/', end + 1)) {  // every link on the path, from the top
    if (H5Lexists(id_, object.substr(0, end).c_str(), H5P_DEFAULT) <= 0) {
      H5Eclear2(H5E_DEFAULT);
      return false;
    }
    if (end == std::string::npos) return true;
  }
}

namespace {

// The attribute `name` of `object`, of class `expected` (H5T_NO_CLASS: of any).
Id open_attr(hid_t file, const std::string& path, const std::string& object, const std::string& name,
             H5T_class_t expected = H5T_NO_CLASS) {
  const std::string what = "attribute '" + name + "' of " + object;
  if (H5Aexists_by_name(file, object.c_str(), name.c_str(), H5P_DEFAULT) <= 0) fail(path, what + " is missing");
  Id attr(H5Aopen_by_name(file, object.c_str(), name.c_str(), H5P_DEFAULT, H5P_DEFAULT), H5Aclose);
  if (!attr.ok()) fail(path, what + " cannot be opened");
  if (expected == H5T_NO_CLASS) return attr;
  Id type(H5Aget_type(attr), H5Tclose);
  if (!type.ok() || H5Tget_class(type) != expected) fail(path, what + " has another type than expected");
  return attr;
}

// A scalar integer or real attribute, of class `cls`, read as `mem_type`.
template <typename T>
T scalar_attr(hid_t file, const std::string& path, const std::string& object, const std::string& name,
              H5T_class_t cls, hid_t mem_type) {
  QuietErrors quiet;
  Id attr = open_attr(file, path, object, name, cls);
  T value = 0;
  if (H5Aread(attr, mem_type, &value) < 0) fail(path, "attribute '" + name + "' of " + object + " cannot be read");
  return value;
}

}  // namespace

std::string ReadFile::string_attr(const std::string& object, const std::string& name) const {
  QuietErrors quiet;
  const std::string what = "attribute '" + name + "' of " + object;
  Id attr = open_attr(id_, path_, object, name, H5T_STRING);
  Id type(H5Aget_type(attr), H5Tclose);
  const bool variable = H5Tis_variable_str(type) > 0;
  const size_t size = variable ? 0 : H5Tget_size(type);
  if (!variable && (size == 0 || size > (size_t{1} << 24))) fail(path_, what + " has an impossible string size");
  Id mem(H5Tcopy(H5T_C_S1), H5Tclose);
  H5Tset_size(mem, variable ? H5T_VARIABLE : size);
  H5Tset_cset(mem, H5Tget_cset(type));  // UTF-8 and ASCII do not convert into each other
  if (variable) {
    char* text = nullptr;
    if (H5Aread(attr, mem, &text) < 0 || text == nullptr) fail(path_, what + " cannot be read");
    std::string value(text);
    H5free_memory(text);
    return value;
  }
  std::string value(size, '\0');
  if (H5Aread(attr, mem, value.data()) < 0) fail(path_, what + " cannot be read");
  value.resize(std::strlen(value.c_str()));
  return value;
}

int64_t ReadFile::int_attr(const std::string& object, const std::string& name) const {
  return scalar_attr<int64_t>(id_, path_, object, name, H5T_INTEGER, H5T_NATIVE_INT64);
}

double ReadFile::real_attr(const std::string& object, const std::string& name) const {
  return scalar_attr<double>(id_, path_, object, name, H5T_FLOAT, H5T_NATIVE_DOUBLE);
}

std::vector<std::string> ReadFile::members(const std::string& group) const {
  QuietErrors quiet;
  Id g(H5Gopen2(id_, group.c_str(), H5P_DEFAULT), H5Gclose);
  if (!g.ok()) fail(path_, "group " + group + " is missing");
  H5G_info_t info;
  if (H5Gget_info(g, &info) < 0) fail(path_, "group " + group + " cannot be listed");
  std::vector<std::string> names;
  for (hsize_t i = 0; i < info.nlinks; ++i) {  // by index: the same call in HDF5 1.10 and 1.12+
    const ssize_t len = H5Lget_name_by_idx(g, ".", H5_INDEX_NAME, H5_ITER_INC, i, nullptr, 0, H5P_DEFAULT);
    if (len < 0) fail(path_, "group " + group + " cannot be listed");
    std::string name(static_cast<size_t>(len) + 1, '\0');
    H5Lget_name_by_idx(g, ".", H5_INDEX_NAME, H5_ITER_INC, i, name.data(), name.size(), H5P_DEFAULT);
    name.resize(static_cast<size_t>(len));
    names.push_back(std::move(name));
  }
  std::sort(names.begin(), names.end());
  return names;
}

std::vector<std::string> ReadFile::attribute_names(const std::string& object) const {
  QuietErrors quiet;
  Id obj(H5Oopen(id_, object.c_str(), H5P_DEFAULT), H5Oclose);
  if (!obj.ok()) fail(path_, object + " is missing");
  std::vector<std::string> names;
  const auto collect = [](hid_t, const char* name, const H5A_info_t*, void* out) -> herr_t {
    static_cast<std::vector<std::string>*>(out)->emplace_back(name);
    return 0;
  };
  hsize_t at = 0;
  if (H5Aiterate2(obj, H5_INDEX_NAME, H5_ITER_INC, &at, collect, &names) < 0)
    fail(path_, "the attributes of " + object + " cannot be listed");
  std::sort(names.begin(), names.end());
  return names;
}

ReadFile::AttributeKind ReadFile::attribute_kind(const std::string& object, const std::string& name) const {
  QuietErrors quiet;
  Id attr = open_attr(id_, path_, object, name);
  Id type(H5Aget_type(attr), H5Tclose);
  Id space(H5Aget_space(attr), H5Sclose);
  if (!type.ok() || !space.ok() || H5Sget_simple_extent_type(space) != H5S_SCALAR) return AttributeKind::other;
  switch (H5Tget_class(type)) {
    case H5T_STRING: return AttributeKind::string;
    case H5T_INTEGER: return AttributeKind::integer;
    case H5T_FLOAT: return AttributeKind::real;
    default: return AttributeKind::other;
  }
}

template <typename T>
Array<T> ReadFile::read(const std::string& dataset) const {
  constexpr bool integer = std::is_integral_v<T>;
  const hid_t mem_type = std::is_same_v<T, float>    ? H5T_NATIVE_FLOAT
                         : std::is_same_v<T, double> ? H5T_NATIVE_DOUBLE
                         : std::is_same_v<T, int64_t> ? H5T_NATIVE_INT64
                                                      : H5T_NATIVE_UINT64;
  QuietErrors quiet;
  Id d(H5Dopen2(id_, dataset.c_str(), H5P_DEFAULT), H5Dclose);
  if (!d.ok()) fail(path_, "dataset " + dataset + " is missing");
  Id type(H5Dget_type(d), H5Tclose);
  const H5T_class_t cls = type.ok() ? H5Tget_class(type) : H5T_NO_CLASS;
  if (cls != (integer ? H5T_INTEGER : H5T_FLOAT))
    fail(path_, "dataset " + dataset + " holds " + (cls == H5T_INTEGER ? "integers" : "another type") + ", expected " +
                    (integer ? "integers" : "floating-point numbers"));
  Id space(H5Dget_space(d), H5Sclose);
  const int rank = space.ok() ? H5Sget_simple_extent_ndims(space) : -1;
  if (rank < 1 || rank > 3) fail(path_, "dataset " + dataset + " has " + std::to_string(rank) + " dims, expected 1 to 3");
  hsize_t extent[3] = {0, 0, 0};
  H5Sget_simple_extent_dims(space, extent, nullptr);
  uint64_t count = 1;
  Array<T> out;
  for (int i = 0; i < rank; ++i) {
    out.dims.push_back(static_cast<int64_t>(extent[i]));
    count *= extent[i];
  }
  hsize_t file_bytes = 0;
  H5Fget_filesize(id_, &file_bytes);
  if (count > (file_bytes * kMaxExpansion + (uint64_t{1} << 20)) / sizeof(T))
    fail(path_, "dataset " + dataset + " claims " + std::to_string(count) + " elements, more than the file's " +
                    std::to_string(file_bytes) + " bytes can hold (damaged header)");
  out.values.resize(static_cast<size_t>(count));
  if (count > 0 && H5Dread(d, mem_type, H5S_ALL, H5S_ALL, H5P_DEFAULT, out.values.data()) < 0)
    fail(path_, "dataset " + dataset + " cannot be read (damaged: a checksum or decompression failed)");
  return out;
}

template Array<float> ReadFile::read(const std::string&) const;
template Array<double> ReadFile::read(const std::string&) const;
template Array<int64_t> ReadFile::read(const std::string&) const;
template Array<uint64_t> ReadFile::read(const std::string&) const;

void ReadFile::read_series(const std::string& group, std::initializer_list<SeriesInto> series) const {
  for (const SeriesInto& s : series)
    std::visit([&]<typename T>(std::vector<T>* into) { *into = read<T>(group + "/" + s.name).values; }, s.into);
}

}  // namespace ts::h5
