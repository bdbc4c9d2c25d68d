// The run-file check (see run_file_check.h): H5Fopen read-only with HDF5's error printing off,
// then the root `schema` attribute and the /summary attributes the writer always sets.
#include "metrics/run_file_check.h"

#include <hdf5.h>

#include <filesystem>
#include <utility>



namespace ts {
namespace {

// "H5Fopen: unable to open file; H5F_open: truncated file: eof = 1024, ...": HDF5's outermost
// messages, which say why a file does not open.
herr_t collect_error(unsigned n, const H5E_error2_t* err, void* out) {
  auto* msg = static_cast<std::string*>(out);
  if (n >= 3) return 0;
  if (!msg->empty()) *msg += "; ";
  *msg += std::string(err->func_name ? err->func_name : "?") + ": " + (err->desc ? err->desc : "?");
  return 0;
}

std::string take_error_stack() {
  std::string detail;
  H5Ewalk2(H5E_DEFAULT, H5E_WALK_DOWNWARD, collect_error, &detail);
  H5Eclear2(H5E_DEFAULT);
  return detail;
}

// HDF5's automatic error printing off while a check runs: a bad file is an answer, not noise.
class QuietErrors {
 public:
  QuietErrors() {
    H5Eget_auto2(H5E_DEFAULT, &func_, &data_);
    H5Eset_auto2(H5E_DEFAULT, nullptr, nullptr);
  }
  ~QuietErrors() { H5Eset_auto2(H5E_DEFAULT, func_, data_); }
  QuietErrors(const QuietErrors&) = delete;
  QuietErrors& operator=(const QuietErrors&) = delete;

 private:
  H5E_auto2_t func_ = nullptr;
  void* data_ = nullptr;
};

// An HDF5 id closed on scope exit.
class Id {
 public:
  Id(hid_t id, herr_t (*closer)(hid_t)) : id_(id), closer_(closer) {}
  ~Id() {
    if (id_ >= 0) closer_(id_);
  }
  Id(const Id&) = delete;
  Id& operator=(const Id&) = delete;
  hid_t get() const { return id_; }
  bool ok() const { return id_ >= 0; }

 private:
  hid_t id_;
  herr_t (*closer_)(hid_t);
};

RunFileCheck incomplete(std::string detail) { return {RunFileState::incomplete, std::move(detail)}; }

// The opened file's root schema attribute and its /summary attributes.
RunFileCheck check_contents(hid_t file) {
  if (H5Aexists(file, "schema") <= 0) return incomplete("no root attribute `schema` (not a trainscale run file)");
  if (H5Lexists(file, "summary", H5P_DEFAULT) <= 0) return incomplete("no /summary group");
  Id summary(H5Gopen2(file, "summary", H5P_DEFAULT), H5Gclose);
  if (!summary.ok()) return incomplete("/summary does not open as a group (" + take_error_stack() + ")");
  for (const std::string& key : run_file_summary_keys())
    if (H5Aexists(summary.get(), key.c_str()) <= 0) return incomplete("/summary lacks the attribute `" + key + "`");
  return {RunFileState::complete, ""};
}

}  // namespace

const char* run_file_state_name(RunFileState state) {
  switch (state) {
    case RunFileState::complete: return "complete";
    case RunFileState::missing: return "missing";
    case RunFileState::unreadable: return "unreadable";
    case RunFileState::incomplete: return "incomplete";
  }
  return "?";
}

RunFileCheck check_run_file(const std::string& path) {
  std::error_code ec;
  if (!std::filesystem::exists(path, ec)) return {RunFileState::missing, "no file " + path};
  if (!std::filesystem::is_regular_file(path, ec)) return {RunFileState::unreadable, path + " is not a regular file"};
  QuietErrors quiet;
  Id file(H5Fopen(path.c_str(), H5F_ACC_RDONLY, H5P_DEFAULT), H5Fclose);
  if (!file.ok()) {
    const std::string why = take_error_stack();
    return {RunFileState::unreadable, "does not open as HDF5" + (why.empty() ? std::string() : " (" + why + ")")};
  }
  RunFileCheck check = check_contents(file.get());
  H5Eclear2(H5E_DEFAULT);
  return check;
}

}  // namespace ts
