// The HDF5 RAII wrapper (see hdf5_file.h): every call checked, errors name the HDF5 call, the
// file, the object inside it, the library's own message and this file's line.
#include "metrics/hdf5_file.h"

#include <hdf5.h>

#include <algorithm>
#include <cstring>
#include <type_traits>
#include <utility>

#include "core/error.h"
#include "core/file_io.h"
#include "hdf5/hdf5_support.h"

static_assert(std::is_same_v<hid_t, int64_t>, "hdf5_file.h stores hid_t as int64_t (HDF5 >= 1.10)");

namespace ts::h5 {
namespace {

[[noreturn]] void fail(const char* expr, const std::string& file, const std::string& object,
                       const char* src, int line) {
  hdf5::fail_call(expr, file, object, source_location_string(src, line) + ": ");
}

template <typename T>
T checked(T result, const char* expr, const std::string& file, const std::string& object,
          const char* src, int line) {
  if (result < 0) fail(expr, file, object, src, line);
  return result;
}

// Checks an HDF5 call that returns hid_t/herr_t/htri_t (negative = failure).
#define H5_CALL(expr, object) checked((expr), #expr, file_path_, (object), __FILE__, __LINE__)

// A temporary id (dataspace, property list, datatype, attribute) closed on scope exit.
using Temp = hdf5::Id;

// Variable-length UTF-8 string type (h5py reads it as `str`).
hid_t vlen_string_type(const std::string& file, const std::string& object) {
  const std::string& file_path_ = file;
  hid_t t = H5_CALL(H5Tcopy(H5T_C_S1), object);
  if (H5Tset_size(t, H5T_VARIABLE) < 0 || H5Tset_cset(t, H5T_CSET_UTF8) < 0) {
    H5Tclose(t);
    fail("H5Tset_size/H5Tset_cset", file, object, __FILE__, __LINE__);
  }
  return t;
}

// The in-memory file grows in steps of this many bytes.
constexpr size_t kCoreIncrement = size_t{1} << 20;

}  // namespace

// ---- Object --------------------------------------------------------------------------------

Object::~Object() {
  if (id_ < 0) return;
  switch (kind_) {
    case Kind::file: H5Fclose(id_); break;
    case Kind::group: H5Gclose(id_); break;
    case Kind::dataset: H5Dclose(id_); break;
    case Kind::none: break;
  }
}

Object::Object(Object&& o) noexcept
    : id_(std::exchange(o.id_, -1)), kind_(o.kind_), file_path_(std::move(o.file_path_)),
      object_path_(std::move(o.object_path_)) {}

std::string Object::child_path(const std::string& name) const {
  if (object_path_.empty() || object_path_ == "/") return "/" + name;
  return object_path_ + "/" + name;
}

namespace {
// Creates (replacing an existing one) the scalar attribute `name` of `type` on `id`.
hid_t create_scalar_attr(hid_t id, const std::string& name, hid_t type, const std::string& file_path_,
                         const std::string& where) {
  if (H5_CALL(H5Aexists(id, name.c_str()), where) > 0) H5_CALL(H5Adelete(id, name.c_str()), where);
  Temp space(H5_CALL(H5Screate(H5S_SCALAR), where), H5Sclose);
  return H5_CALL(H5Acreate2(id, name.c_str(), type, space, H5P_DEFAULT, H5P_DEFAULT), where);
}
}  // namespace

void Object::set_attr(const std::string& name, const std::string& value) {
  const std::string where = object_path_ + " attribute " + name;
  Temp type(vlen_string_type(file_path_, where), H5Tclose);
  Temp attr(create_scalar_attr(id_, name, type, file_path_, where), H5Aclose);
  const char* text = value.c_str();
  H5_CALL(H5Awrite(attr, type, &text), where);
}

void Object::set_attr(const std::string& name, int64_t value) {
  const std::string where = object_path_ + " attribute " + name;
  Temp attr(create_scalar_attr(id_, name, H5T_STD_I64LE, file_path_, where), H5Aclose);
  H5_CALL(H5Awrite(attr, H5T_NATIVE_INT64, &value), where);
}

void Object::set_attr(const std::string& name, double value) {
  const std::string where = object_path_ + " attribute " + name;
  Temp attr(create_scalar_attr(id_, name, H5T_IEEE_F64LE, file_path_, where), H5Aclose);
  H5_CALL(H5Awrite(attr, H5T_NATIVE_DOUBLE, &value), where);
}

void Object::set_attrs(std::initializer_list<std::pair<std::string, AttrValue>> attrs) {
  // not a structured binding: clang 14 (the fuzz and sanitizer builds) cannot capture one
  for (const auto& attr : attrs) std::visit([&](const auto& v) { set_attr(attr.first, v); }, attr.second);
}

// ---- Group ---------------------------------------------------------------------------------

Group Group::create_group(const std::string& name) {
  const std::string path = child_path(name);
  hid_t g = H5_CALL(H5Gcreate2(id_, name.c_str(), H5P_DEFAULT, H5P_DEFAULT, H5P_DEFAULT), path);
  Group group(g, Kind::group, file_path_, path);
  group.options_ = options_;
  return group;
}

Dataset Group::write_chunked(const std::string& name, const std::vector<int64_t>& dims, int64_t mem_type,
                             int64_t file_type, const void* data, uint64_t chunk_elements) {
  const std::string path = child_path(name);
  const int rank = static_cast<int>(dims.size());
  if (rank < 1 || rank > 3 || std::any_of(dims.begin(), dims.end(), [](int64_t d) { return d < 0; }))
    throw RuntimeError(source_location_string(__FILE__, __LINE__) + ": dataset '" + path +
                       "' in file " + file_path_ + ": rank 1 to 3 with non-negative dims expected");
  hsize_t cur[3], max[3], chunk[3];
  // Chunks: the inner dim whole (bounded), then as many rows as fit in chunk_elements. Zero
  // dims are unlimited so that a chunk of 1 is legal and the dataset may still be empty.
  hsize_t inner = 1;
  for (int i = rank - 1; i >= 0; --i) {
    cur[i] = static_cast<hsize_t>(dims[static_cast<size_t>(i)]);
    max[i] = cur[i] == 0 ? H5S_UNLIMITED : cur[i];
    hsize_t bound = std::max<hsize_t>(1, chunk_elements / inner);
    chunk[i] = std::clamp<hsize_t>(cur[i], 1, bound);
    inner *= chunk[i];
  }
  Temp space(H5_CALL(H5Screate_simple(rank, cur, max), path), H5Sclose);
  Temp dcpl(H5_CALL(H5Pcreate(H5P_DATASET_CREATE), path), H5Pclose);
  H5_CALL(H5Pset_chunk(dcpl, rank, chunk), path);
  if (options_.checksum) H5_CALL(H5Pset_fletcher32(dcpl), path);
  if (options_.deflate) H5_CALL(H5Pset_deflate(dcpl, 4), path);
  hid_t d = H5_CALL(H5Dcreate2(id_, name.c_str(), file_type, space, H5P_DEFAULT, dcpl, H5P_DEFAULT), path);
  Dataset out(d, Kind::dataset, file_path_, path);
  hsize_t n = 1;
  for (int i = 0; i < rank; ++i) n *= cur[i];
  if (n > 0) H5_CALL(H5Dwrite(d, mem_type, H5S_ALL, H5S_ALL, H5P_DEFAULT, data), path);
  return out;
}

template <typename T>
Dataset Group::write(const std::string& name, const std::vector<int64_t>& dims, const T* data) {
  if constexpr (std::is_same_v<T, int64_t>) return write_chunked(name, dims, H5T_NATIVE_INT64, H5T_STD_I64LE, data);
  else if constexpr (std::is_same_v<T, uint64_t>) return write_chunked(name, dims, H5T_NATIVE_UINT64, H5T_STD_U64LE, data);
  else if constexpr (std::is_same_v<T, float>) return write_chunked(name, dims, H5T_NATIVE_FLOAT, H5T_IEEE_F32LE, data);
  else return write_chunked(name, dims, H5T_NATIVE_DOUBLE, H5T_IEEE_F64LE, data);
}

template Dataset Group::write(const std::string&, const std::vector<int64_t>&, const int64_t*);
template Dataset Group::write(const std::string&, const std::vector<int64_t>&, const uint64_t*);
template Dataset Group::write(const std::string&, const std::vector<int64_t>&, const float*);
template Dataset Group::write(const std::string&, const std::vector<int64_t>&, const double*);

void Group::write_series(std::initializer_list<Series> series) {
  for (const Series& s : series) {
    Dataset d = std::visit([&](const auto* v) {
      return s.dims.empty() ? write(s.name, *v) : write(s.name, s.dims, v->data());
    }, s.values);
    if (s.units != nullptr) d.set_attr("units", s.units);
  }
}

Dataset Group::write_table(const std::string& name, const std::vector<Column>& columns) {
  const std::string path = child_path(name);
  const size_t rows = columns.empty() ? 0 : columns.front().rows();
  for (const auto& c : columns)
    if (c.rows() != rows)
      throw RuntimeError(source_location_string(__FILE__, __LINE__) + ": table '" + path +
                         "' in file " + file_path_ + ": column '" + c.name + "' has " +
                         std::to_string(c.rows()) + " rows, expected " + std::to_string(rows));
  // Row layout in memory: one 8-byte slot per column (const char*, int64_t or double).
  const size_t row_bytes = 8 * std::max<size_t>(columns.size(), 1);
  Temp str_type(vlen_string_type(file_path_, path), H5Tclose);
  Temp type(H5_CALL(H5Tcreate(H5T_COMPOUND, row_bytes), path), H5Tclose);
  for (size_t k = 0; k < columns.size(); ++k) {
    hid_t field = columns[k].type == Column::Type::string  ? hid_t(str_type)
                  : columns[k].type == Column::Type::int64 ? H5T_NATIVE_INT64
                                                           : H5T_NATIVE_DOUBLE;
    H5_CALL(H5Tinsert(type, columns[k].name.c_str(), 8 * k, field), path + " field " + columns[k].name);
  }
  std::vector<unsigned char> buf(rows * row_bytes);
  for (size_t r = 0; r < rows; ++r)
    for (size_t k = 0; k < columns.size(); ++k) {
      unsigned char* slot = buf.data() + r * row_bytes + 8 * k;
      const Column& c = columns[k];
      if (c.type == Column::Type::string) {
        const char* p = c.strings[r].c_str();
        std::memcpy(slot, &p, sizeof p);
      } else if (c.type == Column::Type::int64) {
        std::memcpy(slot, &c.ints[r], 8);
      } else {
        std::memcpy(slot, &c.reals[r], 8);
      }
    }
  return write_chunked(name, {static_cast<int64_t>(rows)}, type, type, buf.data(), 1024);
}

Dataset Group::write_strings(const std::string& name, const std::vector<std::string>& v) {
  const std::string path = child_path(name);
  Temp str_type(vlen_string_type(file_path_, path), H5Tclose);
  std::vector<const char*> pointers;
  for (const std::string& s : v) pointers.push_back(s.c_str());
  hsize_t dims[1] = {v.size()};
  Temp space(H5_CALL(H5Screate_simple(1, dims, nullptr), path), H5Sclose);
  hid_t d = H5_CALL(H5Dcreate2(id_, name.c_str(), str_type, space, H5P_DEFAULT, H5P_DEFAULT, H5P_DEFAULT), path);
  Dataset out(d, Kind::dataset, file_path_, path);
  if (!v.empty()) H5_CALL(H5Dwrite(d, str_type, H5S_ALL, H5S_ALL, H5P_DEFAULT, pointers.data()), path);
  return out;
}

// ---- File ----------------------------------------------------------------------------------

File::File(int64_t id, std::string path) : Group(id, Kind::file, std::move(path), "/") {}

File File::create(const std::string& path, DatasetOptions options) {
  // Errors become exceptions with the library's message; stop HDF5 printing its own stack.
  auto quiet = std::make_unique<hdf5::QuietErrors>();
  hid_t fapl = H5Pcreate(H5P_FILE_ACCESS);
  const bool in_memory = fapl >= 0 && H5Pset_fapl_core(fapl, kCoreIncrement, 0) >= 0;
  hid_t id = in_memory ? H5Fcreate(path.c_str(), H5F_ACC_TRUNC, H5P_DEFAULT, fapl) : -1;
  if (fapl >= 0) H5Pclose(fapl);
  if (id < 0) {
    throw RuntimeError(source_location_string(__FILE__, __LINE__) + ": HDF5 call H5Fcreate failed for file " + path +
                       " (" + hdf5::take_error_stack() + ")");
  }
  File f(id, path);
  f.options_ = options;
  f.quiet_ = std::move(quiet);
  return f;
}

void File::close() {
  if (id_ < 0) return;
  H5_CALL(H5Fflush(id_, H5F_SCOPE_GLOBAL), "/");
  const ssize_t size = H5_CALL(H5Fget_file_image(id_, nullptr, 0), "/");
  std::string image(static_cast<size_t>(size), '\0');
  H5_CALL(H5Fget_file_image(id_, image.data(), image.size()), "/");
  H5_CALL(H5Fclose(std::exchange(id_, -1)), "/");  // a file in memory: closing it touches no disk
  quiet_.reset();
  write_whole_file(file_path_, image);
}

File::~File() {
  if (id_ >= 0) H5Fclose(std::exchange(id_, -1));
}

File::File(File&& o) noexcept = default;

void write_file(const std::string& path, const std::string& schema, const std::function<void(File&)>& fill,
                DatasetOptions options) {
  AtomicFile out(path);  // removes its temporary file if anything below throws
  File file = File::create(out.temp_path(), options);
  file.set_attr("schema", schema);
  fill(file);
  file.close();
  out.commit();
}

}  // namespace ts::h5
