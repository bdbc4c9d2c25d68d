// config-internal: the values of every enum-like run-config key and their names, and the
// conversion from a checked name to the enum (done once, when a config is resolved).
#pragma once

#include <stdexcept>
#include <string>
#include <vector>

#include "config/run_config.h"

namespace ts {

std::vector<BackendKind> all_backend_kinds();
std::vector<Precision> all_precisions();
std::vector<LrScheduleKind> all_lr_schedule_kinds();
std::vector<LrScale> all_lr_scales();
std::vector<LossScaleMode> all_loss_scale_modes();
std::vector<LossReads> all_loss_reads();  // step, log (auto is the key unset)
std::vector<MpiFlavor> all_mpi_flavors();
std::vector<GpuGeneration> all_gpu_generations();  // none, the generations oldest first, any

template <class E>
std::vector<std::string> enum_names(const std::vector<E>& values, const char* (*name)(E)) {
  std::vector<std::string> out;
  for (E v : values) out.push_back(name(v));
  return out;
}

// The value whose name is `text`. The schema checked the text against enum_names() before, so
// an unknown name here is a bug, reported as such.
template <class E>
E enum_from_name(const std::vector<E>& values, const char* (*name)(E), const std::string& text, const char* key) {
  for (E v : values)
    if (text == name(v)) return v;
  throw std::logic_error(std::string("config: no enum value for ") + key + " '" + text + "'");
}

}  // namespace ts
