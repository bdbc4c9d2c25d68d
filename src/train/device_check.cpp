// The device a run's backend was built on, against what the run expects (see device_check.h).
#include "train/device_check.h"

#include <algorithm>
#include <string>
#include <vector>

#include "backend/backend_factory.h"
#include "backend/gpu_generation.h"
#include "core/error.h"
#include "core/strings.h"

namespace ts {

void check_device(const DeviceOptions& o, const Backend& backend) {
  const std::string name = backend_kind_name(o.backend);
  const Precision precision = o.precision;
  const Precision all[] = {Precision::fp32, Precision::bf16, Precision::fp16, Precision::tf32};
  for (Op op : {Op::conv, Op::fc}) {
    if (backend.supports(op, precision)) continue;
    std::vector<std::string> ok, elsewhere, not_built;
    for (Precision p : all)
      if (backend.supports(op, p)) ok.push_back(precision_name(p));
    const auto built = available_backends();
    for (const std::string& other : built) {
      if (other == name) continue;
      try {
        if (make_backend(other)->supports(op, precision)) elsewhere.push_back(other);
      } catch (const NoDeviceError& e) {  // built, but this machine has no device for it
        elsewhere.push_back(other + " (no device here to ask: " + e.reason + ")");
      }
    }
    for (const std::string& known : known_backends())
      if (std::find(built.begin(), built.end(), known) == built.end()) not_built.push_back(known);
    throw UnsupportedError(o.precision_key + ": '" + precision_name(precision) + "' is not supported by backend '" +
                      name + "' on this machine (" + backend.describe().isa + "; it computes in: " + join(ok) + "); backends of this build that compute in " +
                      precision_name(precision) + ": " + (elsewhere.empty() ? "none" : join(elsewhere)) +
                      (not_built.empty() ? "" : " (not built here: " + join(not_built) + ")"));
  }
  check_gpu_generation(o.gpu, o.gpu_key, backend.describe());
  if (std::string why = generation_lacks_precision(o.gpu, o.precision, o.precision_key, o.gpu_key); !why.empty())
    throw UnsupportedError(why);
}

void check_gpu_generation(GpuGeneration gpu, const std::string& gpu_key, const DeviceDescription& device) {
  const std::string expected = gpu_generation_name(gpu);
  // A description without a generation: a GPU's comes from its name, a CPU has none.
  const bool cpu = device.device.empty() || device.device == "cpu";
  const std::string detected =
      !device.generation.empty() ? device.generation : cpu ? std::string("none") : gpu_generation_of(device.name);
  const bool on_gpu = detected != "none";
  // "backend 'cuda' computes on cuda:0 (NVIDIA A100-SXM4-80GB, GPU generation a100)"
  const std::string found = "backend '" + device.backend + "' computes on " +
                            (on_gpu ? device.device : std::string("the CPU")) + " (" + device.name +
                            ", GPU generation " + detected + ")";
  const std::string matching = detected == "other" ? "gpu: any" : "gpu: " + detected + " or gpu: any";
  if (gpu == GpuGeneration::none) {
    if (on_gpu)
      throw ConfigError(gpu_key + ": the run expects no GPU (gpu: none) but " + found + "; set " + matching);
    return;
  }
  if (!on_gpu)
    throw ConfigError(gpu_key + ": the run expects " +
                      (gpu == GpuGeneration::any ? std::string("a GPU (gpu: any)") : "GPU generation '" + expected + "'") +
                      " but " + found + "; set backend: cuda, or gpu: none for a CPU run");
  if (gpu != GpuGeneration::any && detected != expected)
    throw ConfigError(gpu_key + ": the run expects GPU generation '" + expected + "' but detected '" +
                      detected + "': " + found + "; run it on a node with a " + expected +
                      " GPU (a site's gpu." + expected + " mapping requests one), or set " + matching);
}

std::string generation_lacks_precision(GpuGeneration gpu, Precision p, const std::string& precision_key,
                                       const std::string& gpu_key) {
  if (gpu == GpuGeneration::none || gpu == GpuGeneration::any) return "";
  const std::string generation = gpu_generation_name(gpu), precision = precision_name(p);
  const std::vector<std::string> has = gpu_generation_precisions(generation);
  if (std::find(has.begin(), has.end(), precision) != has.end()) return "";
  return precision_key + ": GPU generation " + generation + " has no " + precision + " arithmetic (" + gpu_key +
         "; it computes in " + join(has) + ")";
}

}  // namespace ts
