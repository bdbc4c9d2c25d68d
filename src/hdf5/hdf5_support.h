// What every user of the HDF5 C API here needs (the run and benchmark files of metrics/, the
// hdf5 data format of data/): HDF5's error stack as text, its printing turned off while errors
// become exceptions, ids closed on scope exit, and one message for a failed call.
#pragma once

#include <hdf5.h>

#include <string>

namespace ts::hdf5 {

constexpr H5Z_filter_t kLz4Filter = 32004;  // the registered id of the HDF5 LZ4 plugin

// The outermost few frames of HDF5's error stack, "H5Dread: can't read data; H5D__read: ...",
// and the stack cleared; "" when it is empty.
std::string take_error_stack();

// Throws RuntimeError "<where>HDF5 call <call> failed for '<object>' in file <file> (<stack>)";
// `where` is a prefix such as "src/x.cpp:12: " or "". `call` may be the whole expression: the
// part before its first '(' is named.
[[noreturn]] void fail_call(const std::string& call, const std::string& file, const std::string& object,
                            const std::string& where = "");

// `result` if it is >= 0 (HDF5's success), else fail_call().
template <typename T>
T check(T result, const char* call, const std::string& file, const std::string& object) {
  if (result < 0) fail_call(call, file, object);
  return result;
}

// Turns off HDF5's printing of its error stack for the object's lifetime: a bad file is an
// answer or an exception, not noise on stderr.
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

// An HDF5 id (file, group, dataset, dataspace, type, attribute, property list) closed on scope
// exit by its closer (H5Fclose, H5Dclose, ...). Negative ids (a failed open) close nothing.
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
  hid_t get() const { return id_; }
  bool ok() const { return id_ >= 0; }

 private:
  void reset() {
    if (id_ >= 0 && closer_) closer_(id_);
    id_ = -1;
  }
  hid_t id_ = -1;
  herr_t (*closer_)(hid_t) = nullptr;
};

}  // namespace ts::hdf5
