// Shared by the CUDA tests (tests/cpp/test_cuda_*.cpp): why they skip on a machine without a
// device, in the backend's own words (the driver's error, or no driver at all).
#pragma once

#include <string>

#include "backend/cuda/cuda_backend.h"

namespace ts::testing_support {

// "" when a CUDA device is present, else "no CUDA device (<reason>)" for GTEST_SKIP.
inline std::string cuda_skip_reason() {
  if (CudaBackend::device_count() > 0) return "";
  try {
    CudaBackend probe(0);
  } catch (const NoDeviceError& e) {
    return "no CUDA device (" + e.reason + ")";
  }
  return "no CUDA device (the driver reported none, then one)";
}

}  // namespace ts::testing_support
