// The names other modules' registries accept, as the config schema needs them: models
// (nn/models.h), backends, precisions, data sets and their formats, dist strategies and
// all-reduce algorithms (dist/). The schema lists them in errors and --help, and resolution
// turns them into the typed config's enums. Data-set names come from ONE function,
// data_names(), the single place that knows the data module's registry.
#pragma once

#include <string>
#include <vector>

namespace ts {

std::vector<std::string> accepted_model_names();
std::vector<std::string> accepted_backend_names();    // every backend the project knows, built or not
std::vector<std::string> accepted_precision_names();
std::vector<std::string> accepted_algorithm_choice_names();
std::vector<std::string> accepted_conv_api_names();  // cuda.conv_api  // cuda.algorithms
std::vector<std::string> accepted_strategy_names();
std::vector<std::string> accepted_partition_names();        // dist.partition
std::vector<std::string> accepted_hetero_allreduce_names();  // dist.hetero_allreduce
std::vector<std::string> accepted_compression_names();
std::vector<std::string> accepted_error_feedback_modes();
std::vector<std::string> accepted_allreduce_names();  // every algorithm, built or not (nccl: cuda)
std::vector<std::string> accepted_lr_schedule_kinds();
std::vector<std::string> accepted_lr_scales();
std::vector<std::string> accepted_loss_scale_modes();
std::vector<std::string> accepted_mpi_flavors();
std::vector<std::string> accepted_loss_reads();  // loss_reads
// none, the GPU generations of backend/gpu_generation.h (oldest first), any.
std::vector<std::string> accepted_gpu_generations();

// The data sets this build reads and their formats.
struct DataNames {
  std::vector<std::string> datasets;  // documentation order
  std::vector<std::string> formats;   // every format some data set is read in
  std::vector<std::string> reserved;  // formats the schema knows that no data set reads yet
  // Formats of one data set, its own (default) format first; empty for an unknown data set.
  std::vector<std::string> formats_of(const std::string& dataset) const;
  std::string default_format(const std::string& dataset) const;  // "" for an unknown data set
  std::vector<std::pair<std::string, std::vector<std::string>>> table;  // data set -> formats
};
const DataNames& data_names();
// formats + reserved: what dataset.format accepts before it is checked against the data set.
std::vector<std::string> accepted_dataset_formats();

}  // namespace ts
