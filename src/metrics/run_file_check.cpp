// The run-file check (see run_file_check.h): H5Fopen read-only with HDF5's error printing off,
// then the root `schema` attribute and the /summary attributes the writer always sets.
#include "metrics/run_file_check.h"

#include <hdf5.h>

#include <filesystem>
#include <utility>

#include "core/error.h"
#include "hdf5/hdf5_support.h"
#include "metrics/hdf5_reader.h"

namespace ts {
namespace {

using hdf5::Id;
using hdf5::QuietErrors;
using hdf5::take_error_stack;

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
  if (check.state != RunFileState::complete) return check;
  file = Id();  // the ids through the checked reader: a root attribute of another type reads as ""
  try {
    const h5::ReadFile ids = h5::ReadFile::open(path);
    for (auto [name, value] : {std::pair{"run_id", &check.run_id}, std::pair{"config_id", &check.config_id}}) try {
        *value = ids.string_attr("/", name);
      } catch (const RuntimeError&) {
      }
  } catch (const RuntimeError& e) {
    return {RunFileState::unreadable, e.what()};
  }
  return check;
}

}  // namespace ts
