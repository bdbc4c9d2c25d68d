// A small RAII wrapper over the HDF5 C API for the writers in metrics/ (run files, all-reduce
// benchmark files, checkpoints): create a file, groups, scalar string/int64/float64 attributes,
// 1-D to 3-D chunked datasets (deflate-compressed, and/or Fletcher-32 checksummed so that a
// reader detects damaged chunks), and compound tables. Every HDF5 call is checked;
// a failure throws RuntimeError naming the call, the file, the object and file:line.
// This header does not include <hdf5.h>: ids are int64_t (hid_t in HDF5 >= 1.10).
#pragma once

#include <cstdint>
#include <functional>
#include <initializer_list>
#include <memory>
#include <string>
#include <type_traits>
#include <utility>
#include <variant>
#include <vector>

namespace ts::hdf5 {
class QuietErrors;  // hdf5/hdf5_support.h
}

namespace ts::h5 {

// One open HDF5 object (file, group or dataset); closes itself, movable but not assignable.
class Object {
 public:
  ~Object();
  Object(Object&& o) noexcept;
  Object(const Object&) = delete;
  Object& operator=(const Object&) = delete;

  // Scalar attributes on this object. Strings are variable-length UTF-8 (h5py reads `str`).
  void set_attr(const std::string& name, const std::string& value);
  void set_attr(const std::string& name, int64_t value);
  void set_attr(const std::string& name, double value);
  // Scalar attributes from a table, in order: {{"name", value}, ...}.
  using AttrValue = std::variant<std::string, int64_t, double>;
  void set_attrs(std::initializer_list<std::pair<std::string, AttrValue>> attrs);

 protected:
  enum class Kind { none, file, group, dataset };
  Object(int64_t id, Kind kind, std::string file_path, std::string object_path)
      : id_(id), kind_(kind), file_path_(std::move(file_path)), object_path_(std::move(object_path)) {}
  // "<parent>/<name>" for messages.
  std::string child_path(const std::string& name) const;

  int64_t id_ = -1;
  Kind kind_ = Kind::none;
  std::string file_path_;
  std::string object_path_;

  friend class Group;
};

using Dataset = Object;

// One column of a compound table: name plus exactly one of the value vectors filled.
struct Column {
  enum class Type { string, int64, float64 };
  std::string name;
  Type type = Type::string;
  std::vector<std::string> strings;
  std::vector<int64_t> ints;
  std::vector<double> reals;

  static Column of(std::string name, std::vector<std::string> v) {
    return {std::move(name), Type::string, std::move(v), {}, {}};
  }
  static Column of(std::string name, std::vector<int64_t> v) {
    return {std::move(name), Type::int64, {}, std::move(v), {}};
  }
  static Column of(std::string name, std::vector<double> v) {
    return {std::move(name), Type::float64, {}, {}, std::move(v)};
  }
  // The column of `field` (a member pointer, or a function of a row) over `rows`.
  template <typename Rows, typename Field>
  static Column of(std::string name, const Rows& rows, Field field) {
    std::vector<std::decay_t<std::invoke_result_t<Field, const typename Rows::value_type&>>> values;
    for (const auto& row : rows) values.push_back(std::invoke(field, row));
    return of(std::move(name), std::move(values));
  }
  size_t rows() const { return type == Type::string ? strings.size() : type == Type::int64 ? ints.size() : reals.size(); }
};

// One dataset for Group::write_series: its name, its values (row-major), its "units" attribute
// (none when null) and its dims (empty: 1-D, the values' length).
struct Series {
  template <typename T>
  Series(std::string name, const std::vector<T>& values, const char* units = nullptr, std::vector<int64_t> dims = {})
      : name(std::move(name)), values(&values), units(units), dims(std::move(dims)) {}
  std::string name;
  std::variant<const std::vector<int64_t>*, const std::vector<uint64_t>*, const std::vector<float>*,
               const std::vector<double>*>
      values;
  const char* units;
  std::vector<int64_t> dims;
};

// How the datasets of a file are stored: run files are compressed; checkpoints are written
// fast (no deflate) and checksummed (Fletcher-32 per chunk: HDF5 refuses to read a damaged one).
struct DatasetOptions {
  bool deflate = true;
  bool checksum = false;
};

// A group (the file's root group included) that can hold groups, datasets and tables.
class Group : public Object {
 public:
  Group create_group(const std::string& name);

  // Datasets of shape `dims` (rank 1 to 3, row-major, any dim may be 0), chunked with chunks
  // of at most ~64 Ki elements and deflate level 4. data holds product(dims) values of T:
  // int64_t, uint64_t, float or double.
  template <typename T>
  Dataset write(const std::string& name, const std::vector<int64_t>& dims, const T* data);
  // 1-D: shape (v.size()).
  template <typename T>
  Dataset write(const std::string& name, const std::vector<T>& v) { return write(name, {static_cast<int64_t>(v.size())}, v.data()); }

  // Each series as a dataset (then its "units" attribute), in order.
  void write_series(std::initializer_list<Series> series);

  // A 1-D dataset of variable-length UTF-8 strings (h5py: .asstr()[:] or bytes to decode).
  Dataset write_strings(const std::string& name, const std::vector<std::string>& v);

  // A 1-D dataset of a compound type with one field per column, in column order (strings are
  // variable-length UTF-8, integers int64, reals float64), chunks of up to 1024 rows; all columns
  // must have equal length.
  Dataset write_table(const std::string& name, const std::vector<Column>& columns);

 protected:
  using Object::Object;
  friend class File;

 private:
  // Creates dataset `name` of `file_type`, chunks of at most `chunk_elements` elements and the
  // file's filters, and writes `data` (of `mem_type`) into it.
  Dataset write_chunked(const std::string& name, const std::vector<int64_t>& dims, int64_t mem_type,
                        int64_t file_type, const void* data, uint64_t chunk_elements = 65536);

  DatasetOptions options_;  // the file's, handed to every group created in it
};

// An HDF5 file created (truncated) for writing; it is also its root group "/".
// While a File is open, HDF5's automatic error printing is off (errors become exceptions).
//
// The file is built in memory (HDF5's core driver, no backing store) and written to `path`
// with checked write calls only by close(): HDF5 itself never writes to disk. Why: when a
// flush fails (a full disk), HDF5 1.10's H5Fclose fails half-way and leaves the file's id
// behind half-destroyed; the library's cleanup at exit then crashes on it (SIGSEGV in
// H5F__close_cb, or "infinite loop closing library"). A file dropped without close() (an
// error path) is discarded: nothing reaches the disk.
class File : public Group {
 public:
  static File create(const std::string& path, DatasetOptions options = {});
  // Closes every object of the file, takes its image and writes it to its path (RuntimeError
  // naming the path and the system's reason, e.g. "No space left on device").
  void close();
  ~File();
  File(File&&) noexcept;

 private:
  File(int64_t id, std::string path);
  std::unique_ptr<hdf5::QuietErrors> quiet_;  // HDF5's error printing, restored when the File closes
};

// Every file of metrics/: `path` written atomically (core/file_io.h AtomicFile: a temporary name
// renamed over `path` once complete; an exception leaves nothing behind), its root attribute
// "schema" first, then what `fill` writes into the file.
void write_file(const std::string& path, const std::string& schema, const std::function<void(File&)>& fill,
                DatasetOptions options = {});

}  // namespace ts::h5
