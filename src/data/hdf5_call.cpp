// Checked HDF5 calls of the hdf5 data format (see hdf5_call.h).
#include "data/hdf5_call.h"

#include "core/error.h"

namespace ts::h5data {
namespace {

// The outermost few frames of HDF5's error stack: "H5Dread: can't read data; H5D__read: ...".
herr_t collect_error(unsigned n, const H5E_error2_t* err, void* out) {
  auto* msg = static_cast<std::string*>(out);
  if (n >= 3) return 0;
  if (!msg->empty()) *msg += "; ";
  *msg += std::string(err->func_name ? err->func_name : "?") + ": " + (err->desc ? err->desc : "?");
  return 0;
}

}  // namespace

void fail(const char* call, const std::string& file, const std::string& object) {
  std::string detail;
  H5Ewalk2(H5E_DEFAULT, H5E_WALK_DOWNWARD, collect_error, &detail);
  H5Eclear2(H5E_DEFAULT);
  throw RuntimeError(std::string("HDF5 call ") + call + " failed for '" + object + "' in file " + file +
                     (detail.empty() ? "" : " (" + detail + ")"));
}

QuietErrors::QuietErrors() {
  H5Eget_auto2(H5E_DEFAULT, &func_, &data_);
  H5Eset_auto2(H5E_DEFAULT, nullptr, nullptr);
}

QuietErrors::~QuietErrors() { H5Eset_auto2(H5E_DEFAULT, func_, data_); }

}  // namespace ts::h5data
