// The device half of the memory check (train/device_memory_estimate.h) without a GPU: a backend
// that computes like `ref` but reports its allocations as a device's memory (host_accessible
// false, device_memory() from the bytes it holds) stands in for cuda. The estimate must match
// what the real model then takes when planned at the training batch, the bound must divide the
// free memory over the ranks sharing a device, and check_memory must refuse, naming the device,
// also when the probe itself does not fit (recorded, not thrown: the refusal is collective).
// The driver's own count on a GPU is checked by scripts/device_memory.sh (docs/gpu.md).
#include <gtest/gtest.h>

#include <algorithm>
#include <memory>
#include <string>
#include <vector>

#include "backend/plan_choices.h"
#include "backend/ref/ref_backend.h"
#include "config/run_config.h"
#include "core/error.h"
#include "dist/communicator.h"
#include "nn/models.h"
#include "nn/net.h"
#include "train/device_memory_estimate.h"
#include "train/memory_estimate.h"
#include "train/phase_options.h"

#include "mpi_test_environment.h"

namespace ts {
namespace {

constexpr int64_t kDeviceBytes = int64_t{8} << 30;
constexpr int64_t kContextBytes = int64_t{300} << 20;  // what a device holds before the run: context, libraries

class CountingDeviceBackend final : public RefBackend, public PlanChoices {
 public:
  explicit CountingDeviceBackend(int devices = 1, int64_t cap = kDeviceBytes - kContextBytes)
      : devices_(devices), cap_(cap) {}
  DeviceDescription describe() const override {
    DeviceDescription d = RefBackend::describe();
    d.device = "fake:0";
    d.name = "counting device";
    d.host_accessible = false;
    return d;
  }
  DeviceMemoryUse device_memory() const override {
    DeviceMemoryUse m;
    m.total = kDeviceBytes;
    m.used = kContextBytes + held_;
    m.free = m.total - m.used;
    m.devices = devices_;
    return m;
  }
  DeviceBuffer allocate(size_t bytes) override {  // as cuda's: a RuntimeError when it does not fit
    if (held_ + static_cast<int64_t>(bytes) > cap_) throw RuntimeError("out of device memory (fake)");
    held_ += static_cast<int64_t>(bytes);
    return RefBackend::allocate(bytes);
  }
  int64_t held() const { return held_; }
  // As cuda's: one note per planned convolution, naming its shape (conv:mb64_...).
  std::unique_ptr<ConvOp> plan_conv(const ConvDesc& d, const TensorDesc& src, const TensorDesc& dst) override {
    notes_.push_back(d.str());
    return RefBackend::plan_conv(d, src, dst);
  }
  std::vector<std::string> plan_notes() const override { return notes_; }
  void drop_plan_notes(size_t keep) override { notes_.resize(std::min(keep, notes_.size())); }
  void set_workspace_limit(size_t) override {}
  void set_algorithm_choice(AlgorithmChoice) override {}
  void set_conv_api(ConvApi, bool) override {}
  size_t workspace_bytes() const override { return 0; }

 protected:
  void release(void* data, size_t bytes, bool host) override {
    if (!host) held_ -= static_cast<int64_t>(bytes);
    RefBackend::release(data, bytes, host);
  }

 private:
  int devices_;
  int64_t cap_;
  int64_t held_ = 0;
  std::vector<std::string> notes_;
};

RunConfig config_of(const std::string& yaml) { return parse_run_config(yaml, "cfg.yaml", {}).run; }

// The estimate's parts against the model built and planned for real at `batch`.
void expect_estimate_matches(const std::string& model, int64_t batch) {
  SCOPED_TRACE(model + " at batch " + std::to_string(batch));
  CountingDeviceBackend backend;
  const RunConfig r = config_of("model: " + model + "\nmomentum: 0.9\n");
  const ModelInput input = model_expected_input(model);
  const DeviceMemoryEstimate e = estimate_device_memory(model_options_of(r), r.momentum, backend, input, batch, batch);
  ASSERT_TRUE(e.applies);
  EXPECT_EQ(backend.held(), 0) << "the probe gave its memory back";
  EXPECT_EQ(e.used_at_check, kContextBytes);
  std::unique_ptr<Net> net = build_model(model, backend, input, r.seed, r.dropout);
  EXPECT_EQ(e.parameters, backend.held()) << "the arenas, as building the model allocates them";
  EXPECT_EQ(e.optimizer, net->param_count() * 4);
  const int64_t arenas = backend.held();
  net->set_batch(batch);
  const double planned = static_cast<double>(backend.held() - arenas);
  EXPECT_NEAR(static_cast<double>(e.activations_train) / planned, 1.0, 0.02);
  EXPECT_EQ(e.activations_eval, e.activations_train);  // the same batch
  EXPECT_GT(e.activation_per_sample, 0);
  EXPECT_EQ(e.input, 2 * batch * input.sample.numel() * 4);
  EXPECT_EQ(e.total(), e.parameters + e.optimizer + e.activations_train + e.input);
}

TEST(DeviceMemoryEstimate, MatchesWhatTheModelTakesAtTheTrainingBatch) {
  expect_estimate_matches("lenet", 256);
  expect_estimate_matches("resnet20", 64);
}

// The run file's device_plans are the run's: at 7ab771a an H200 run listed the probe's batch-4 and
// batch-16 plans before its own.
TEST(DeviceMemoryEstimate, LeavesTheProbesPlansOutOfThePlanNotes) {
  CountingDeviceBackend backend;
  const RunConfig r = config_of("model: lenet\n");
  const ModelInput input = model_expected_input("lenet");
  std::unique_ptr<Net> before = build_model("lenet", backend, input, r.seed, r.dropout);
  before->set_batch(8);  // plans made before the check stay
  const std::vector<std::string> notes_before = backend.plan_notes();
  ASSERT_FALSE(notes_before.empty());
  const DeviceMemoryEstimate e = estimate_device_memory(model_options_of(r), r.momentum, backend, input, 64, 64);
  ASSERT_TRUE(e.applies);
  EXPECT_EQ(backend.plan_notes(), notes_before);
  std::unique_ptr<Net> net = build_model("lenet", backend, input, r.seed, r.dropout);
  net->set_batch(64);
  const std::vector<std::string> notes = backend.plan_notes();
  ASSERT_GT(notes.size(), notes_before.size());
  for (size_t i = notes_before.size(); i < notes.size(); ++i)
    EXPECT_EQ(notes[i].rfind("conv:mb64_", 0), 0u) << notes[i];
}

TEST(DeviceMemoryEstimate, DoesNotApplyToHostBackends) {
  RefBackend backend;
  const RunConfig r = config_of("model: lenet\n");
  const DeviceMemoryEstimate e =
      estimate_device_memory(model_options_of(r), r.momentum, backend, model_expected_input("lenet"), 64, 64);
  EXPECT_FALSE(e.applies);
  EXPECT_EQ(e.total(), 0);
  EXPECT_TRUE(e.named().empty());
  EXPECT_EQ(device_memory_bound(backend, 1).bytes, 0);
}

TEST(DeviceMemoryBound, SharesTheFreeMemoryAmongTheRanksOnOneDevice) {
  CountingDeviceBackend one_device(1), two_devices(2);
  const int64_t free_bytes = kDeviceBytes - kContextBytes;
  EXPECT_EQ(device_memory_bound(one_device, 1).bytes, free_bytes);
  const DeviceMemoryBound three = device_memory_bound(one_device, 3);
  EXPECT_EQ(three.bytes, free_bytes / 3);
  EXPECT_NE(three.source.find("shared by the 3 ranks"), std::string::npos) << three.source;
  EXPECT_EQ(device_memory_bound(two_devices, 3).bytes, free_bytes / 2);  // ranks 0 and 2 on device 0
  EXPECT_EQ(device_memory_bound(two_devices, 2).bytes, free_bytes);
}

TEST(DeviceMemoryCheck, RefusesAnEstimateAboveTheFreeDeviceMemory) {
  CountingDeviceBackend backend;
  const ResolvedConfig cfg = parse_run_config("model: lenet\nbatch_per_worker: 64\n", "cfg.yaml", {});
  auto comm = Communicator::self();
  MemoryEstimate e;
  e.device = estimate_device_memory(model_options_of(cfg.run), cfg.run.momentum, backend, model_expected_input("lenet"),
                                    64, 64);
  MemoryBound bound;
  bound.device = device_memory_bound(backend, 1);
  EXPECT_NO_THROW(check_memory(memory_options_of(cfg.run), e, bound, *comm));
  bound.device.bytes = e.device.total() - 1;
  try {
    check_memory(memory_options_of(cfg.run), e, bound, *comm);
    FAIL() << "an estimate above the device's free memory was accepted";
  } catch (const ConfigError& err) {
    const std::string m = err.what();
    EXPECT_NE(m.find("device memory: this run needs about"), std::string::npos) << m;
    EXPECT_NE(m.find("fake:0 (counting device) has"), std::string::npos) << m;
    EXPECT_NE(m.find("Lower batch_per_worker"), std::string::npos) << m;
  }
}

TEST(DeviceMemoryCheck, AProbeThatDoesNotFitIsRefusedNotThrown) {
  CountingDeviceBackend backend(1, int64_t{4} << 20);  // room for resnet20's arenas, not its activations at 16
  const ResolvedConfig cfg = parse_run_config("model: resnet20\n", "cfg.yaml", {});
  auto comm = Communicator::self();
  MemoryEstimate e;
  e.device = estimate_device_memory(model_options_of(cfg.run), cfg.run.momentum, backend, model_expected_input("resnet20"),
                                    64, 64);
  EXPECT_NE(e.device.probe_error.find("out of device memory (fake)"), std::string::npos) << e.device.probe_error;
  EXPECT_EQ(backend.held(), 0) << "the probe gave its memory back";
  MemoryBound bound;
  bound.device = device_memory_bound(backend, 1);
  try {
    check_memory(memory_options_of(cfg.run), e, bound, *comm);
    FAIL() << "a probe that did not fit was accepted";
  } catch (const ConfigError& err) {
    EXPECT_NE(std::string(err.what()).find("a probe of the model (planned at batches 4 and 16) does not fit"),
              std::string::npos) << err.what();
  }
}

}  // namespace
}  // namespace ts
