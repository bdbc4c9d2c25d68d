// Names from the registries of the modules below config (see registries.h).
#include "config/registries.h"

#include <algorithm>

#include "backend/backend.h"
#include "config/enums.h"
#include "data/datasets.h"
#include "dist/batch_partition.h"
#include "nn/models.h"

namespace ts {

std::vector<std::string> accepted_model_names() { return model_names(); }
// The backend API's list (backend/backend.h); every name must have a BackendKind (a test checks).
std::vector<std::string> accepted_backend_names() { return known_backends(); }
std::vector<std::string> accepted_precision_names() { return enum_names(all_precisions(), precision_name); }
std::vector<std::string> accepted_strategy_names() { return enum_names(all_dist_strategies(), dist_strategy_name); }
std::vector<std::string> accepted_algorithm_choice_names() {
  return enum_names(all_algorithm_choices(), algorithm_choice_name);
}
std::vector<std::string> accepted_conv_api_names() { return enum_names(all_conv_apis(), conv_api_name); }
std::vector<std::string> accepted_partition_names() { return enum_names(all_partition_kinds(), partition_kind_name); }
std::vector<std::string> accepted_hetero_allreduce_names() { return {"host", "device"}; }
std::vector<std::string> accepted_compression_names() { return enum_names(all_compression_kinds(), compression_kind_name); }
std::vector<std::string> accepted_error_feedback_modes() {
  return enum_names(all_error_feedback_modes(), error_feedback_mode_name);
}
std::vector<std::string> accepted_allreduce_names() {
  return enum_names(known_allreduce_algorithms(), allreduce_algorithm_name);
}
std::vector<std::string> accepted_lr_schedule_kinds() { return enum_names(all_lr_schedule_kinds(), lr_schedule_kind_name); }
std::vector<std::string> accepted_lr_scales() { return enum_names(all_lr_scales(), lr_scale_name); }
std::vector<std::string> accepted_loss_scale_modes() { return enum_names(all_loss_scale_modes(), loss_scale_mode_name); }
std::vector<std::string> accepted_loss_reads() { return enum_names(all_loss_reads(), loss_reads_name); }
std::vector<std::string> accepted_mpi_flavors() { return enum_names(all_mpi_flavors(), mpi_flavor_name); }
// The enum's names; a test checks that they are "none", backend/gpu_generation.h's list and "any".
std::vector<std::string> accepted_gpu_generations() { return enum_names(all_gpu_generations(), gpu_generation_name); }

std::vector<std::string> DataNames::formats_of(const std::string& dataset) const {
  for (const auto& [name, fmts] : table)
    if (name == dataset) return fmts;
  return {};
}

std::string DataNames::default_format(const std::string& dataset) const {
  const auto fmts = formats_of(dataset);
  return fmts.empty() ? "" : fmts.front();
}

// The one place that knows the data module's names: data/datasets.h's registry (data sets, the
// formats each is read in, its own first). The formats the design reserves for the data issue
// (hdf5, records, jpeg_dir) are accepted by the schema and refused with a clear message until
// the data module reads them.
const DataNames& data_names() {
  static const DataNames names = [] {
    DataNames n;
    n.datasets = dataset_names();
    n.formats = dataset_format_names();
    for (const auto& name : n.datasets) n.table.emplace_back(name, dataset_formats(name));
    for (const char* reserved : {"hdf5", "records", "jpeg_dir"})
      if (std::find(n.formats.begin(), n.formats.end(), reserved) == n.formats.end()) n.reserved.push_back(reserved);
    return n;
  }();
  return names;
}

std::vector<std::string> accepted_dataset_formats() {
  std::vector<std::string> all = data_names().formats;
  for (const auto& r : data_names().reserved) all.push_back(r);
  return all;
}

}  // namespace ts
