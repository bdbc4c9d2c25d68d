// Reading HDF5 files that metrics/ wrote (checkpoints): open read-only, scalar attributes,
// whole 1-D to 3-D numeric datasets. Every call is checked, and every value's type and shape are
// checked against what the caller expects, so a damaged or foreign file is a RuntimeError that
// names the file, the object and what was wrong, never a crash or a silent garbage value.
// Datasets written with checksums (DatasetOptions::checksum) are verified by HDF5 while read.
#pragma once

#include <cstdint>
#include <initializer_list>
#include <string>
#include <variant>
#include <vector>

namespace ts::h5 {

// A numeric dataset read whole: its dims (1 to 3 of them) and its values, row-major.
template <typename T>
struct Array {
  std::vector<int64_t> dims;
  std::vector<T> values;
};

// One dataset for ReadFile::read_series: its name in the group and the vector its values go to.
struct SeriesInto {
  template <typename T>
  SeriesInto(std::string name, std::vector<T>& into) : name(std::move(name)), into(&into) {}
  std::string name;
  std::variant<std::vector<int64_t>*, std::vector<uint64_t>*, std::vector<float>*, std::vector<double>*> into;
};

class ReadFile {
 public:
  // RuntimeError naming the file when it is missing, not HDF5, or truncated.
  static ReadFile open(const std::string& path);
  ~ReadFile();
  ReadFile(const ReadFile&) = delete;
  ReadFile& operator=(const ReadFile&) = delete;

  const std::string& path() const { return path_; }
  // True when `object` ("/train/step", "/timing") exists (every group on its path too).
  bool exists(const std::string& object) const;
  // The scalar attribute `name` of `object` ("/" for the root); RuntimeError when it is missing
  // or of another type (strings: any HDF5 string; integers: any integer type; reals: floats).
  std::string string_attr(const std::string& object, const std::string& name) const;
  int64_t int_attr(const std::string& object, const std::string& name) const;
  double real_attr(const std::string& object, const std::string& name) const;
  // The names in a group, sorted.
  std::vector<std::string> members(const std::string& group) const;
  // The names of `object`'s attributes, sorted ("/" for the root).
  std::vector<std::string> attribute_names(const std::string& object) const;
  // The kind of a scalar attribute's value: which of the three readers above takes it.
  enum class AttributeKind { string, integer, real, other };
  AttributeKind attribute_kind(const std::string& object, const std::string& name) const;
  // The whole dataset converted to T: float, double, int64_t or uint64_t (HDF5 converts between
  // numeric types; integers into floats or back, or a dataset of more than 3 dims, is a RuntimeError).
  template <typename T>
  Array<T> read(const std::string& dataset) const;
  // Each series' dataset `group`/name, whole (its dims are not checked), into its vector, in order.
  void read_series(const std::string& group, std::initializer_list<SeriesInto> series) const;

 private:
  ReadFile(int64_t id, std::string path) : id_(id), path_(std::move(path)) {}

  int64_t id_ = -1;
  std::string path_;
};

}  // namespace ts::h5
