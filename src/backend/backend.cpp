// The backend factory and the names of the backend enums (backend/backend.h).
#include "backend/backend.h"

#include "backend/cpu/cpu_backend.h"
#include "backend/ref/ref_backend.h"
#include "core/error.h"

namespace ts {

const char* precision_name(Precision p) {
  switch (p) {
    case Precision::fp32: return "fp32";
    case Precision::bf16: return "bf16";
    case Precision::fp16: return "fp16";
    case Precision::tf32: return "tf32";
  }
  return "unknown";
}

const char* op_name(Op op) {
  switch (op) {
    case Op::conv: return "conv";
    case Op::pool: return "pool";
    case Op::fc: return "fc";
    case Op::batchnorm: return "batchnorm";
    case Op::eltwise: return "eltwise";
    case Op::softmax_xent: return "softmax_xent";
    case Op::mse: return "mse";
    case Op::add: return "add";
    case Op::concat: return "concat";
    case Op::dropout: return "dropout";
    case Op::sgd: return "sgd";
  }
  return "unknown";
}

std::vector<std::string> available_backends() {
  // "cuda" joins this list when the CUDA backend is built (TRAINSCALE_HAVE_CUDA).
  return {"ref", "cpu"};
}

std::unique_ptr<Backend> make_backend(const std::string& name) {
  if (name == "ref") return std::make_unique<RefBackend>();
  if (name == "cpu") return std::make_unique<CpuBackend>();
  std::string list;
  for (const auto& n : available_backends()) list += (list.empty() ? "" : ", ") + n;
  throw ConfigError("unknown backend '" + name + "'; this build has: " + list);
}

}  // namespace ts
