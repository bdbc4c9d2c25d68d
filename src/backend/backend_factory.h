// Backends by name: the factory on top of the concrete backends (ref, cpu, and cuda where built).
// Everything else sees only the Backend interface (backend/backend.h).
#pragma once

#include <memory>
#include <string>
#include <vector>

#include "backend/backend.h"

namespace ts {

// Creates a backend by name. `local_rank` (the rank's index among the ranks of its node) picks
// the device of device backends (cuda: local_rank modulo the visible devices); CPU backends
// ignore it. Throws ConfigError for an unknown name or one this build lacks, listing the ones it
// has, and NoDeviceError (a ConfigError) when the backend is built but the machine has no device.
std::unique_ptr<Backend> make_backend(const std::string& name, int local_rank = 0);
// Names of the backends compiled into this build ("ref", "cpu"[, "cuda"]), whether or not this
// machine has their device.
std::vector<std::string> available_backends();

// The queue a backend computes on, as opaque handles for libraries that queue work beside it
// (dist/ orders its NCCL calls and staging copies after backward with events on it): cuda's
// cudaStream_t and device ordinal; {nullptr, -1} for the host backends, which compute
// synchronously.
struct BackendQueue {
  void* stream = nullptr;
  int device = -1;
};
BackendQueue backend_queue(Backend& backend);

}  // namespace ts
