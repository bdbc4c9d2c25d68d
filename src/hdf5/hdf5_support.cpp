// HDF5 error text, quiet errors and checked calls (see hdf5_support.h).
#include "hdf5/hdf5_support.h"

#include "core/error.h"

namespace ts::hdf5 {
namespace {

herr_t collect_error(unsigned n, const H5E_error2_t* err, void* out) {
  auto* msg = static_cast<std::string*>(out);
  if (n >= 3) return 0;  // the outermost few frames say enough
  if (!msg->empty()) *msg += "; ";
  *msg += std::string(err->func_name ? err->func_name : "?") + ": " + (err->desc ? err->desc : "?");
  return 0;
}

}  // namespace

std::string take_error_stack() {
  std::string detail;
  H5Ewalk2(H5E_DEFAULT, H5E_WALK_DOWNWARD, collect_error, &detail);
  H5Eclear2(H5E_DEFAULT);
  return detail;
}

void fail_call(const std::string& call, const std::string& file, const std::string& object, const std::string& where) {
  const std::string detail = take_error_stack();
  throw RuntimeError(where + "HDF5 call " + call.substr(0, call.find('(')) + " failed for '" + object + "' in file " +
                     file + (detail.empty() ? "" : " (" + detail + ")"));
}

QuietErrors::QuietErrors() {
  H5Eget_auto2(H5E_DEFAULT, &func_, &data_);
  H5Eset_auto2(H5E_DEFAULT, nullptr, nullptr);
}

QuietErrors::~QuietErrors() { H5Eset_auto2(H5E_DEFAULT, func_, data_); }

}  // namespace ts::hdf5
