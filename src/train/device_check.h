// train-internal: the device a run's backend was built on, checked against what the run expects
// of it (its precision for conv and fc, its GPU generation) once set-up has built the backend.
// Refusals name the key where the run set it: located texts ("configs/x.yaml:12: key
// 'precision'", config/run_config.h ResolvedConfig::locate) that the options carry.
#pragma once

#include <cstdint>
#include <string>

#include "backend/backend.h"
#include "config/run_enums.h"

namespace ts {

// What set-up builds the backend with, and what the run expects of its device.
struct DeviceOptions {
  BackendKind backend = BackendKind::cpu;
  int threads = 2;
  Precision precision = Precision::fp32;
  GpuGeneration gpu = GpuGeneration::none;
  // cuda: its libraries' choices (backend/plan_choices.h).
  int64_t cuda_workspace_mb = 512;
  AlgorithmChoice cuda_algorithms = AlgorithmChoice::find;
  ConvApi cuda_conv_api = ConvApi::legacy;
  bool cuda_reduced_precision_reduction = false;
  std::string backend_key, precision_key, gpu_key;  // located
};

// The device's answers (Backend::supports, Backend::describe): the precision for conv and fc
// (UnsupportedError naming the backends of this build that compute in it), and the expected
// GPU generation.
void check_device(const DeviceOptions& device, const Backend& backend);
// The `gpu` key against the device a backend describes (docs/config.md "gpu"): none wants a
// CPU (generation "none"), any wants some GPU, a generation wants exactly that one. The
// message names both the expected and the detected generation; `gpu_key` is located.
void check_gpu_generation(GpuGeneration expected, const std::string& gpu_key, const DeviceDescription& device);
// A precision the GPU generation `gpu` has no arithmetic for ("" when it has, or no generation):
// the message names both keys as given (located for a run, "key value" for a sweep's point).
std::string generation_lacks_precision(GpuGeneration gpu, Precision precision, const std::string& precision_key,
                                       const std::string& gpu_key);

}  // namespace ts
