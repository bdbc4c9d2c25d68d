// GPU generations: the names a run config's `gpu` key, a site file's `gpu:` mapping and a run
// file's `device_generation` share, and the one mapping from a device's name (what the driver
// reports, e.g. "NVIDIA A100-SXM4-80GB") to its generation. A GPU backend's describe() fills
// DeviceDescription::generation with gpu_generation_of(name); CPU backends say "none".
#pragma once

#include <string>
#include <vector>

namespace ts {

// Every generation the project names, oldest first: k80, p40, p100, v100, a100, h100, h200.
// ("none" and "any" are run-config words, not generations; config/run_config.h has them.)
std::vector<std::string> known_gpu_generations();

// The generation a device name belongs to, or "other" for a GPU of none of the known
// generations (e.g. a T4 or an L40S; `gpu: any` accepts it). Matches the model as a whole word,
// so "Tesla V100-SXM2-32GB" -> v100 and "NVIDIA H100 80GB HBM3" -> h100, but "NVIDIA GH200"
// (a Grace Hopper superchip, sold with H100- and H200-class memory) -> other. The export
// variants A800 and H800 count as a100 and h100.
std::string gpu_generation_of(const std::string& device_name);

// The precisions a generation's tensor or CUDA cores compute in, as the cuda backend uses them:
// fp32 everywhere; fp16 from Pascal on (P40, P100; K80 has no fp16 arithmetic); tf32 and bf16
// from Ampere on (A100, H100, H200). An unknown name gets fp32 only.
std::vector<std::string> gpu_generation_precisions(const std::string& generation);

}  // namespace ts
