// The table of fuzz targets (see fuzz_targets.h).
#include "fuzz_targets.h"

namespace ts::fuzz {

const std::vector<Target>& targets() {
  static const std::vector<Target> all = {
      {"run_config", run_config}, {"sweep_file", sweep_file}, {"site_file", site_file},
      {"manifest", manifest},     {"idx", idx},               {"cifar", cifar},
      {"records", records},       {"hdf5", hdf5},
      {"jpeg_dir", jpeg_dir},
      {"blob_listing", blob_listing},
  };
  return all;
}

}  // namespace ts::fuzz
