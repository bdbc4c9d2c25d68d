// Checked HDF5 C API calls for the hdf5 data format (hdf5_source.h, hdf5_writer.h): every
// call's result is checked, and a failure is a RuntimeError naming the call, the file, the
// dataset and HDF5's own message. data/ keeps its own small wrapper (metrics/hdf5_file.h is
// another module, which data/ may not include: docs/architecture.md).
#pragma once

#include <hdf5.h>

#include <string>

namespace ts::h5data {

// Throws RuntimeError "HDF5 call <call> failed for '<object>' in file <file> (<HDF5 error stack>)".
[[noreturn]] void fail(const char* call, const std::string& file, const std::string& object);

// `result` if it is >= 0 (HDF5's success), else fail().
template <typename T>
T check(T result, const char* call, const std::string& file, const std::string& object) {
  if (result < 0) fail(call, file, object);
  return result;
}

// An HDF5 id (file, dataset, dataspace, type, attribute, property list) closed on scope exit.
class Id {
 public:
  Id() = default;
  Id(hid_t id, herr_t (*closer)(hid_t)) : id_(id), closer_(closer) {}
  ~Id() { reset(); }
  Id(Id&& o) noexcept : id_(o.id_), closer_(o.closer_) { o.id_ = -1; }
  Id& operator=(Id&& o) noexcept {
    if (this != &o) {
      reset();
      id_ = o.id_, closer_ = o.closer_;
      o.id_ = -1;
    }
    return *this;
  }
  Id(const Id&) = delete;
  Id& operator=(const Id&) = delete;
  operator hid_t() const { return id_; }

 private:
  void reset() {
    if (id_ >= 0 && closer_) closer_(id_);
    id_ = -1;
  }
  hid_t id_ = -1;
  herr_t (*closer_)(hid_t) = nullptr;
};

// Turns off HDF5's printing of its error stack for the object's lifetime (errors become exceptions).
class QuietErrors {
 public:
  QuietErrors();
  ~QuietErrors();
  QuietErrors(const QuietErrors&) = delete;
  QuietErrors& operator=(const QuietErrors&) = delete;

 private:
  H5E_auto2_t func_ = nullptr;
  void* data_ = nullptr;
};

}  // namespace ts::h5data
