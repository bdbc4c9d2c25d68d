// Backends by name: the factory on top of the concrete backends (ref, cpu, and cuda where built).
// Everything else sees only the Backend interface (backend/backend.h).
#pragma once

#include <memory>
#include <string>
#include <vector>

#include "backend/backend.h"

namespace ts {

// Creates a backend by name. Throws ConfigError for an unknown name or one this build lacks,
// listing the ones it has.
std::unique_ptr<Backend> make_backend(const std::string& name);
// Names of the backends compiled into this build ("ref", "cpu"[, "cuda"]).
std::vector<std::string> available_backends();

}  // namespace ts
