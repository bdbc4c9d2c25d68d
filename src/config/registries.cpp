// Names from the registries of the modules below config (see registries.h).
#include "config/registries.h"

#include <algorithm>

#include "config/enums.h"
#include "nn/models.h"

namespace ts {

std::vector<std::string> accepted_model_names() { return model_names(); }
std::vector<std::string> accepted_backend_names() { return enum_names(all_backend_kinds(), backend_kind_name); }
std::vector<std::string> accepted_precision_names() { return enum_names(all_precisions(), precision_name); }
std::vector<std::string> accepted_strategy_names() { return enum_names(all_dist_strategies(), dist_strategy_name); }
std::vector<std::string> accepted_allreduce_names() {
  return enum_names(known_allreduce_algorithms(), allreduce_algorithm_name);
}
std::vector<std::string> accepted_lr_schedule_kinds() { return enum_names(all_lr_schedule_kinds(), lr_schedule_kind_name); }
std::vector<std::string> accepted_lr_scales() { return enum_names(all_lr_scales(), lr_scale_name); }
std::vector<std::string> accepted_mpi_flavors() { return enum_names(all_mpi_flavors(), mpi_flavor_name); }

std::vector<std::string> DataNames::formats_of(const std::string& dataset) const {
  for (const auto& [name, fmts] : table)
    if (name == dataset) return fmts;
  return {};
}

std::string DataNames::default_format(const std::string& dataset) const {
  const auto fmts = formats_of(dataset);
  return fmts.empty() ? "" : fmts.front();
}

// The one place that knows the data module's names. With the streaming sources (issue 11,
// part 2) this reads data/datasets.h: dataset_names(), dataset_formats(name) (own format
// first), dataset_format_names().
const DataNames& data_names() {
  static const DataNames names = [] {
    DataNames n;
    n.table = {{"fashion_mnist", {"idx"}}, {"mnist", {"idx"}}, {"cifar10", {"cifar_bin"}},
               {"synthetic", {"synthetic"}}, {"neuron", {"synthetic"}}};
    n.reserved = {"hdf5", "records", "jpeg_dir"};
    for (const auto& [name, fmts] : n.table) {
      n.datasets.push_back(name);
      for (const auto& f : fmts)
        if (std::find(n.formats.begin(), n.formats.end(), f) == n.formats.end()) n.formats.push_back(f);
    }
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
