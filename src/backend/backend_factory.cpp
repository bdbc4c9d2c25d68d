// The backend factory (see backend_factory.h).
#include "backend/backend_factory.h"

#include "backend/cpu/cpu_backend.h"
#include "backend/ref/ref_backend.h"
#include "core/error.h"
#include "core/strings.h"

namespace ts {

std::vector<std::string> available_backends() {
  // "cuda" joins this list when the CUDA backend is built (TRAINSCALE_HAVE_CUDA).
  return {"ref", "cpu"};
}

std::unique_ptr<Backend> make_backend(const std::string& name) {
  if (name == "ref") return std::make_unique<RefBackend>();
  if (name == "cpu") return std::make_unique<CpuBackend>();
  std::string hint = name == "cuda" ? " (configure with -DTRAINSCALE_CUDA=ON on a machine with the CUDA toolkit)" : "";
  throw ConfigError("backend '" + name + "' is not built into this binary; available: " +
                    join(available_backends(), ", ") + hint);
}

}  // namespace ts
