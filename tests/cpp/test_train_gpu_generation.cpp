// The GPU generation of a run: device names -> generations (backend/gpu_generation.h), and the
// run-start check of the config's `gpu` against the device a backend describes
// (train/device_check.h), with descriptions of GPUs this machine does not have.
#include <gtest/gtest.h>

#include <string>

#include "backend/backend.h"
#include "backend/gpu_generation.h"
#include "backend/backend_factory.h"
#include "config/run_config.h"
#include "core/error.h"
#include "train/device_check.h"

using namespace ts;

namespace {

// What a CUDA backend's describe() says on a node with `gpu_name`.
DeviceDescription gpu_device(const std::string& gpu_name) {
  DeviceDescription d;
  d.backend = "cuda";
  d.device = "cuda:0";
  d.name = gpu_name;
  d.isa = "sm_90";
  d.generation = gpu_generation_of(gpu_name);
  return d;
}

DeviceDescription cpu_device() {
  DeviceDescription d;
  d.backend = "cpu";
  d.device = "cpu";
  d.name = "Test CPU @ 2.0GHz";
  d.generation = "none";
  return d;
}

// The ConfigError of checking `yaml` (a run config) against `device`; "" when it passes.
std::string check_error(const std::string& yaml, const DeviceDescription& device) {
  const ResolvedConfig cfg = parse_run_config(yaml, "run.yaml", {});
  try {
    check_gpu_generation(cfg.run.gpu, cfg.locate("gpu"), device);
  } catch (const ConfigError& e) {
    return e.what();
  }
  return "";
}

}  // namespace

TEST(GpuGeneration, DeviceNamesMapToGenerations) {
  EXPECT_EQ(known_gpu_generations(), (std::vector<std::string>{"k80", "p40", "p100", "v100", "a100", "h100", "h200"}));
  // Names as the CUDA driver reports them.
  EXPECT_EQ(gpu_generation_of("Tesla K80"), "k80");
  EXPECT_EQ(gpu_generation_of("Tesla P40"), "p40");
  EXPECT_EQ(gpu_generation_of("Tesla P100-PCIE-16GB"), "p100");
  EXPECT_EQ(gpu_generation_of("Tesla V100-SXM2-32GB"), "v100");
  EXPECT_EQ(gpu_generation_of("Tesla V100S-PCIE-32GB"), "v100");
  EXPECT_EQ(gpu_generation_of("NVIDIA A100-SXM4-80GB"), "a100");
  EXPECT_EQ(gpu_generation_of("NVIDIA A100 80GB PCIe"), "a100");
  EXPECT_EQ(gpu_generation_of("NVIDIA A800-SXM4-80GB"), "a100");
  EXPECT_EQ(gpu_generation_of("NVIDIA H100 80GB HBM3"), "h100");
  EXPECT_EQ(gpu_generation_of("NVIDIA H100 NVL"), "h100");
  EXPECT_EQ(gpu_generation_of("NVIDIA H800"), "h100");
  EXPECT_EQ(gpu_generation_of("NVIDIA H200"), "h200");
  EXPECT_EQ(gpu_generation_of("nvidia h200 nvl"), "h200");
  // Whole words only: other GPUs are "other", never a near miss.
  EXPECT_EQ(gpu_generation_of("NVIDIA GH200 480GB"), "other");
  EXPECT_EQ(gpu_generation_of("Tesla T4"), "other");
  EXPECT_EQ(gpu_generation_of("NVIDIA A10"), "other");
  EXPECT_EQ(gpu_generation_of("NVIDIA L40S"), "other");
  EXPECT_EQ(gpu_generation_of("NVIDIA GeForce RTX 4090"), "other");
  EXPECT_EQ(gpu_generation_of(""), "other");
}

TEST(GpuGeneration, TheCpuBackendsDescribeNoGeneration) {
  for (const char* name : {"ref", "cpu"}) EXPECT_EQ(make_backend(name)->describe().generation, "none") << name;
  // and pass the check of a CPU run (gpu: none, the default).
  EXPECT_EQ(check_error("backend: cpu\n", make_backend("cpu")->describe()), "");
  EXPECT_EQ(check_error("backend: ref\ngpu: none\n", make_backend("ref")->describe()), "");
}

TEST(GpuGeneration, TheExpectedGenerationMustBeTheDetectedOne) {
  EXPECT_EQ(check_error("backend: cuda\ngpu: h100\n", gpu_device("NVIDIA H100 80GB HBM3")), "");
  EXPECT_EQ(check_error("backend: cuda\ngpu: any\n", gpu_device("NVIDIA H100 80GB HBM3")), "");
  EXPECT_EQ(check_error("backend: cuda\n", gpu_device("Tesla T4")), "");  // unset = any, even another GPU

  std::string e = check_error("backend: cuda\ngpu: h100\n", gpu_device("NVIDIA A100-SXM4-80GB"));
  EXPECT_NE(e.find("run.yaml:2: key 'gpu'"), std::string::npos) << e;
  EXPECT_NE(e.find("expects GPU generation 'h100' but detected 'a100'"), std::string::npos) << e;
  EXPECT_NE(e.find("backend 'cuda' computes on cuda:0 (NVIDIA A100-SXM4-80GB, GPU generation a100)"), std::string::npos) << e;
  EXPECT_NE(e.find("run it on a node with a h100 GPU (a site's gpu.h100 mapping requests one), or set gpu: a100 or gpu: any"),
            std::string::npos)
      << e;
  // A GPU description that leaves the generation empty is judged by the device's name.
  DeviceDescription unnamed = gpu_device("NVIDIA H100 80GB HBM3");
  unnamed.generation = "";
  EXPECT_EQ(check_error("backend: cuda\ngpu: h100\n", unnamed), "");
  EXPECT_NE(check_error("backend: cuda\ngpu: a100\n", unnamed).find("but detected 'h100'"), std::string::npos);
  e = check_error("backend: cuda\ngpu: v100\n", gpu_device("NVIDIA L40S"));
  EXPECT_NE(e.find("expects GPU generation 'v100' but detected 'other'"), std::string::npos) << e;
  EXPECT_NE(e.find("or set gpu: any"), std::string::npos) << e;
}

TEST(GpuGeneration, AGpuExpectationOnTheCpuIsRefused) {
  // The config refuses these combinations when it is parsed; the device check refuses them too
  // (e.g. a backend without a GPU given a config resolved elsewhere).
  ResolvedConfig cfg = parse_run_config("backend: cuda\ngpu: h100\n", "run.yaml", {});
  std::string e;
  try {
    check_gpu_generation(cfg.run.gpu, cfg.locate("gpu"), cpu_device());
  } catch (const ConfigError& err) {
    e = err.what();
  }
  EXPECT_NE(e.find("expects GPU generation 'h100' but backend 'cpu' computes on the CPU (Test CPU @ 2.0GHz, GPU generation none)"),
            std::string::npos)
      << e;
  EXPECT_NE(e.find("set backend: cuda, or gpu: none"), std::string::npos) << e;
  cfg.run.gpu = GpuGeneration::any;
  EXPECT_THROW(check_gpu_generation(cfg.run.gpu, cfg.locate("gpu"), cpu_device()), ConfigError);
  // gpu: none on a device that is a GPU.
  cfg.run.gpu = GpuGeneration::none;
  try {
    check_gpu_generation(cfg.run.gpu, cfg.locate("gpu"), gpu_device("NVIDIA H200"));
    FAIL() << "gpu: none passed on an H200";
  } catch (const ConfigError& err) {
    e = err.what();
  }
  EXPECT_NE(e.find("expects no GPU (gpu: none) but backend 'cuda' computes on cuda:0 (NVIDIA H200, GPU generation h200); "
                   "set gpu: h200 or gpu: any"),
            std::string::npos)
      << e;
}
