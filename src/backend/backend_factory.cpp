// The backend factory (see backend_factory.h).
#include "backend/backend_factory.h"

#include "backend/cpu/cpu_backend.h"
#include "backend/ref/ref_backend.h"
#include "core/error.h"
#include "core/strings.h"
#ifdef TRAINSCALE_HAVE_CUDA
#include "backend/cuda/cuda_backend.h"
#endif

namespace ts {

std::vector<std::string> available_backends() {
#ifdef TRAINSCALE_HAVE_CUDA
  return {"ref", "cpu", "cuda"};
#else
  return {"ref", "cpu"};
#endif
}

std::unique_ptr<Backend> make_backend(const std::string& name, int local_rank) {
  if (name == "ref") return std::make_unique<RefBackend>();
  if (name == "cpu") return std::make_unique<CpuBackend>();
#ifdef TRAINSCALE_HAVE_CUDA
  if (name == "cuda") return std::make_unique<CudaBackend>(local_rank);
#endif
  std::string hint = name == "cuda" ? " (configure with -DTRAINSCALE_CUDA=ON on a machine with the CUDA toolkit)" : "";
  throw ConfigError("backend '" + name + "' is not built into this binary; available: " +
                    join(available_backends(), ", ") + hint);
}

BackendQueue backend_queue(Backend& backend) {
#ifdef TRAINSCALE_HAVE_CUDA
  if (auto* cuda = dynamic_cast<CudaBackend*>(&backend)) return {cuda->stream(), cuda->device()};
#endif
  return {};
}

}  // namespace ts
