// The CUDA backend's core (backend/cuda/cuda_backend.cpp, cuda_kernels.cu) against the ref
// backend and host computations: memory and copies, zeroing, f32/f16/bf16 conversion, the
// optimizer and statistics ops, scale_check_finite, marks and the staging order, describe(). Every case that needs a device
// skips with the reason where there is none; the no-device cases run everywhere else instead.
#include <gtest/gtest.h>

#include <algorithm>
#include <cmath>
#include <cstdint>
#include <cstring>
#include <iostream>
#include <limits>
#include <memory>
#include <string>
#include <vector>

#include "backend/backend_factory.h"
#include "backend/cuda/cuda_backend.h"
#include "backend/cuda/cuda_kernels.h"
#include "backend/device_loss_scaling.h"

#include "cuda_test_support.h"

namespace ts {
namespace {

class CudaBackendTest : public ::testing::Test {
 protected:
  void SetUp() override {
    if (const std::string why = testing_support::cuda_skip_reason(); !why.empty()) GTEST_SKIP() << why;
    backend_ = std::make_unique<CudaBackend>(0);
  }
  std::vector<float> to_host(const void* device, int64_t n) {
    std::vector<float> host(static_cast<size_t>(n));
    backend_->copy_to_host(host.data(), device, host.size() * sizeof(float));
    return host;
  }
  DeviceBuffer from_host(const std::vector<float>& host) {
    DeviceBuffer b = backend_->allocate(host.size() * sizeof(float));
    backend_->copy_from_host(b.data(), host.data(), host.size() * sizeof(float));
    return b;
  }
  std::unique_ptr<CudaBackend> backend_;
};

// Deterministic values over many magnitudes, both signs: m * 2^e, m in [1, 2), e in [-30, 20].
std::vector<float> spread_values(int n, uint32_t seed) {
  std::vector<float> v(static_cast<size_t>(n));
  uint32_t s = seed;
  for (auto& x : v) {
    s = s * 1664525u + 1013904223u;
    const float mantissa = 1.0f + static_cast<float>(s >> 8) / 16777216.0f;
    const int exponent = static_cast<int>((s >> 3) % 51) - 30;
    x = std::ldexp(s & 1 ? -mantissa : mantissa, exponent);
  }
  return v;
}

// Round-to-nearest-even of x to a float format with `mantissa_bits` stored bits, smallest normal
// exponent `min_exponent` (x = 1.m * 2^e) and largest finite value `max_finite`: the host oracle.
float round_to_format(float x, int mantissa_bits, int min_exponent, float max_finite) {
  if (x == 0 || !std::isfinite(x)) return x;
  int k = 0;
  std::frexp(x, &k);  // |x| = m * 2^k, m in [0.5, 1): exponent of 1.m form is k - 1
  const int exponent = std::max(k - 1, min_exponent);  // subnormals share the smallest ulp
  const double ulp = std::ldexp(1.0, exponent - mantissa_bits);
  const double r = std::nearbyint(double(x) / ulp) * ulp;  // FE_TONEAREST: ties to even
  if (std::fabs(r) > max_finite) return std::copysign(std::numeric_limits<float>::infinity(), x);
  return static_cast<float>(r);
}
float round_to_f16(float x) { return round_to_format(x, 10, -14, 65504.0f); }
float round_to_bf16(float x) { return round_to_format(x, 7, -126, std::numeric_limits<float>::max()); }

// Converts `src` (f32) to `mid` on the device and back to f32.
std::vector<float> through(CudaBackend& be, const std::vector<float>& src, DType mid) {
  const int64_t n = static_cast<int64_t>(src.size());
  DeviceBuffer a = be.allocate(src.size() * sizeof(float));
  DeviceBuffer m = be.allocate(src.size() * dtype_bytes(mid));
  DeviceBuffer b = be.allocate(src.size() * sizeof(float));
  be.copy_from_host(a.data(), src.data(), src.size() * sizeof(float));
  cuda::convert(a.data(), DType::f32, m.data(), mid, n, be.stream());
  cuda::convert(m.data(), mid, b.data(), DType::f32, n, be.stream());
  std::vector<float> out(src.size());
  be.copy_to_host(out.data(), b.data(), out.size() * sizeof(float));
  return out;
}

void expect_same_values(const std::vector<float>& got, const std::vector<float>& want, const std::string& what) {
  ASSERT_EQ(got.size(), want.size());
  int bad = 0;
  for (size_t i = 0; i < got.size() && bad < 10; ++i)
    if (!(got[i] == want[i] || (std::isnan(got[i]) && std::isnan(want[i])))) {
      ADD_FAILURE() << what << ": value " << i << " is " << got[i] << ", expected " << want[i];
      ++bad;
    }
}

TEST(CudaNoDevice, MakeBackendSaysNoCudaDevice) {
  if (CudaBackend::device_count() > 0) GTEST_SKIP() << "a CUDA device is present; this case checks the no-device error";
  try {
    make_backend("cuda");
    FAIL() << "make_backend(\"cuda\") did not throw without a device";
  } catch (const NoDeviceError& e) {
    const std::string message = e.what();
    EXPECT_NE(message.find("no CUDA device"), std::string::npos) << message;
    EXPECT_NE(message.find("backend: cpu"), std::string::npos) << message;
    EXPECT_FALSE(e.reason.empty());
    const ConfigError& as_config = e;  // exit 2 for runs
    (void)as_config;
  }
  const auto built = available_backends();
  EXPECT_NE(std::find(built.begin(), built.end(), "cuda"), built.end());
}

TEST_F(CudaBackendTest, MemoryRoundTrips) {
  const std::vector<float> values = spread_values(100003, 1);
  const size_t bytes = values.size() * sizeof(float);
  DeviceBuffer a = from_host(values);
  DeviceBuffer b = backend_->allocate(bytes);
  backend_->copy(b.data(), a.data(), bytes);
  expect_same_values(to_host(b.data(), values.size()), values, "host -> device -> device -> host");

  // Pinned staging memory round trip.
  DeviceBuffer pinned = backend_->allocate_host(bytes);
  ASSERT_TRUE(pinned.host());
  std::memcpy(pinned.data(), values.data(), bytes);
  DeviceBuffer c = backend_->allocate(bytes);
  backend_->copy_from_host(c.data(), pinned.data(), bytes);
  backend_->synchronize();
  expect_same_values(to_host(c.data(), values.size()), values, "pinned -> device -> host");
}

// copy_from_host from pageable memory: the caller may overwrite its buffer right after the call.
TEST_F(CudaBackendTest, PageableSourceMayBeReusedAtOnce) {
  std::vector<float> host = spread_values(1 << 20, 2);
  const std::vector<float> original = host;
  DeviceBuffer d = backend_->allocate(host.size() * sizeof(float));
  backend_->copy_from_host(d.data(), host.data(), host.size() * sizeof(float));
  std::fill(host.begin(), host.end(), -1.0f);
  expect_same_values(to_host(d.data(), original.size()), original, "copy_from_host, source overwritten after");
}

TEST_F(CudaBackendTest, AllocateZeroesAndFillZero) {
  const int64_t n = (1 << 20) + 5;
  {  // leave non-zero bytes behind for the next allocation to reuse
    DeviceBuffer dirty = from_host(std::vector<float>(n, 3.0f));
    backend_->synchronize();
  }
  DeviceBuffer b = backend_->allocate(n * sizeof(float));
  expect_same_values(to_host(b.data(), n), std::vector<float>(n, 0.0f), "allocate");
  DeviceBuffer h = backend_->allocate_host(n * sizeof(float));
  for (int64_t i = 0; i < n; ++i) ASSERT_EQ(h.f32()[i], 0.0f) << "allocate_host value " << i;
  DeviceBuffer c = from_host(std::vector<float>(n, 7.0f));
  backend_->fill_zero(c.data(), n * sizeof(float));
  expect_same_values(to_host(c.data(), n), std::vector<float>(n, 0.0f), "fill_zero");
}

TEST_F(CudaBackendTest, ConvertRepresentableValuesExactly) {
  std::vector<float> f16_exact, bf16_exact;
  for (int i = -2048; i <= 2048; ++i) f16_exact.push_back(std::ldexp(float(i), -4));  // 11 significant bits
  for (float x : {65504.0f, -65504.0f, 6.103515625e-05f, 5.960464477539063e-08f, 0.0f, -0.0f})
    f16_exact.push_back(x);  // largest, smallest normal, smallest subnormal, zeros
  for (int i = -256; i <= 256; ++i) bf16_exact.push_back(std::ldexp(float(i), 3 * (i % 7)));  // 8 significant bits
  bf16_exact.push_back(std::numeric_limits<float>::infinity());
  expect_same_values(through(*backend_, f16_exact, DType::f16), f16_exact, "f32 -> f16 -> f32 (representable)");
  expect_same_values(through(*backend_, bf16_exact, DType::bf16), bf16_exact, "f32 -> bf16 -> f32 (representable)");
}

TEST_F(CudaBackendTest, ConvertRoundsToNearestEven) {
  std::vector<float> values = spread_values(200000, 3);
  for (float tie : {1.0f + 0x1p-11f, 1.0f + 3 * 0x1p-11f, 1.0f + 0x1p-11f + 0x1p-20f,  // f16 ties and past
                    1.0f + 0x1p-8f, 1.0f + 3 * 0x1p-8f, 1.0f + 0x1p-8f + 0x1p-16f,     // bf16 ties and past
                    65519.0f, 65520.0f, 1e-9f, 3e-8f})                                 // f16 overflow, subnormals
    values.push_back(tie);
  std::vector<float> want_f16, want_bf16;
  for (float x : values) {
    want_f16.push_back(round_to_f16(x));
    want_bf16.push_back(round_to_bf16(x));
  }
  expect_same_values(through(*backend_, values, DType::f16), want_f16, "f32 -> f16 -> f32");
  expect_same_values(through(*backend_, values, DType::bf16), want_bf16, "f32 -> bf16 -> f32");

  // f16 -> bf16 and bf16 -> f16 round once, from the exact f32 value of the source.
  const int64_t n = static_cast<int64_t>(values.size());
  DeviceBuffer src = from_host(want_f16);
  DeviceBuffer half = backend_->allocate(n * 2), brain = backend_->allocate(n * 2), back = backend_->allocate(n * 4);
  cuda::convert(src.data(), DType::f32, half.data(), DType::f16, n, backend_->stream());
  cuda::convert(half.data(), DType::f16, brain.data(), DType::bf16, n, backend_->stream());
  cuda::convert(brain.data(), DType::bf16, back.data(), DType::f32, n, backend_->stream());
  std::vector<float> want(values.size());
  for (size_t i = 0; i < values.size(); ++i) want[i] = round_to_bf16(want_f16[i]);
  expect_same_values(to_host(back.data(), n), want, "f16 -> bf16");
  cuda::convert(src.data(), DType::f32, brain.data(), DType::bf16, n, backend_->stream());
  cuda::convert(brain.data(), DType::bf16, half.data(), DType::f16, n, backend_->stream());
  cuda::convert(half.data(), DType::f16, back.data(), DType::f32, n, backend_->stream());
  for (size_t i = 0; i < values.size(); ++i) want[i] = round_to_f16(round_to_bf16(want_f16[i]));
  expect_same_values(to_host(back.data(), n), want, "bf16 -> f16");

  // Bit patterns: 1.0 is 0x3c00 in f16 and 0x3f80 in bf16.
  uint16_t bits[2] = {};
  DeviceBuffer one = from_host({1.0f});
  cuda::convert(one.data(), DType::f32, half.data(), DType::f16, 1, backend_->stream());
  cuda::convert(one.data(), DType::f32, brain.data(), DType::bf16, 1, backend_->stream());
  backend_->copy_to_host(&bits[0], half.data(), 2);
  backend_->copy_to_host(&bits[1], brain.data(), 2);
  EXPECT_EQ(bits[0], 0x3c00);
  EXPECT_EQ(bits[1], 0x3f80);
}

TEST_F(CudaBackendTest, ReorderConvertsDataTypesAndRefusesOtherDims) {
  const std::vector<float> values = spread_values(6 * 7, 4);
  DeviceBuffer src = from_host(values), mid = backend_->allocate(values.size() * 2), dst = backend_->allocate(values.size() * 4);
  const Shape dims{6, 7};
  backend_->reorder({src.data(), TensorDesc::plain(dims, DType::f32)}, {mid.data(), TensorDesc::plain(dims, DType::bf16)});
  backend_->reorder({mid.data(), TensorDesc::plain(dims, DType::bf16)}, {dst.data(), TensorDesc::plain(dims, DType::f32)});
  std::vector<float> want;
  for (float x : values) want.push_back(round_to_bf16(x));
  expect_same_values(to_host(dst.data(), values.size()), want, "reorder f32 -> bf16 -> f32");
  EXPECT_THROW(backend_->reorder({src.data(), TensorDesc::plain(dims)}, {dst.data(), TensorDesc::plain(Shape{7, 6})}),
               ConfigError);
}

// The device's SGD against the ref backend's, over several steps (the kernels use the same
// double arithmetic, so the results are expected to be identical).
TEST_F(CudaBackendTest, SgdStepMatchesRef) {
  auto ref = make_backend("ref");
  const int64_t n = (1 << 20) * 1 + 4099;  // more than one grid's worth: the grid-stride loop repeats
  struct Case { float momentum, weight_decay; bool nesterov; };
  for (const Case c : {Case{0.0f, 0.0f, false}, Case{0.9f, 0.0f, false}, Case{0.9f, 5e-4f, false},
                       Case{0.9f, 5e-4f, true}, Case{0.8f, 1e-2f, true}}) {
    std::vector<float> w = spread_values(n, 5), v(n, 0.0f);
    DeviceBuffer dw = from_host(w), dv = from_host(v);
    for (int step = 0; step < 3; ++step) {
      const std::vector<float> g = spread_values(n, 10 + step);
      DeviceBuffer dg = from_host(g);
      backend_->sgd_step(n, 0.05f, c.momentum, c.weight_decay, c.nesterov, dw.f32(), dg.f32(), dv.f32());
      ref->sgd_step(n, 0.05f, c.momentum, c.weight_decay, c.nesterov, w.data(), g.data(), v.data());
    }
    const std::string what = "sgd momentum " + std::to_string(c.momentum) + " wd " + std::to_string(c.weight_decay) +
                             (c.nesterov ? " nesterov" : "");
    expect_same_values(to_host(dw.data(), n), w, what + " weights");
    expect_same_values(to_host(dv.data(), n), v, what + " velocity");
  }
}

TEST_F(CudaBackendTest, AxpbyMatchesRef) {
  auto ref = make_backend("ref");
  const int64_t n = 300001;
  const std::vector<float> x = spread_values(n, 6);
  std::vector<float> y = spread_values(n, 7);
  DeviceBuffer dx = from_host(x), dy = from_host(y);
  backend_->axpby(n, 0.1f, dx.f32(), 0.9f, dy.f32());
  ref->axpby(n, 0.1f, x.data(), 0.9f, y.data());
  expect_same_values(to_host(dy.data(), n), y, "axpby");
}

TEST_F(CudaBackendTest, ScaleCheckFinite) {
  const int64_t n = (1 << 20) + 17;
  const std::vector<float> values = spread_values(n, 8);
  auto scaled = [&](const std::vector<float>& x, float a) {
    std::vector<float> y(x);
    for (auto& v : y) v *= a;
    return y;
  };
  DeviceBuffer d = from_host(values);
  EXPECT_TRUE(backend_->scale_check_finite(n, 0.125f, d.f32()));
  expect_same_values(to_host(d.data(), n), scaled(values, 0.125f), "finite values scaled");

  for (float bad : {std::numeric_limits<float>::infinity(), -std::numeric_limits<float>::infinity(),
                    std::numeric_limits<float>::quiet_NaN()}) {
    std::vector<float> planted = values;
    planted[n - 3] = bad;  // in the last stride of the grid
    DeviceBuffer p = from_host(planted);
    EXPECT_FALSE(backend_->scale_check_finite(n, 0.5f, p.f32())) << "planted " << bad;
    expect_same_values(to_host(p.data(), n), scaled(planted, 0.5f), "values scaled despite a planted " + std::to_string(bad));
  }
  // The flag is cleared for every call; a value that overflows only after scaling is finite before.
  std::vector<float> big(n, 1.0f);
  big[0] = std::numeric_limits<float>::max();
  DeviceBuffer b = from_host(big);
  EXPECT_TRUE(backend_->scale_check_finite(n, 4.0f, b.f32()));
  EXPECT_TRUE(std::isinf(to_host(b.data(), 1)[0]));
  EXPECT_TRUE(backend_->scale_check_finite(0, 2.0f, nullptr));
}

// QueueMarks::mark / wait_for_mark (cuda_marks.h): each queued loss copy is readable once its mark
// is passed, also a mark the ring of events has overwritten since (loss_reads: log reads up to
// Net::kLossSlots of them at once), and a mark never made is refused.
TEST_F(CudaBackendTest, QueuedCopiesLandByTheirMarks) {
  constexpr int kCopies = 300;  // several times the ring's events
  std::vector<float> values(kCopies);
  for (int i = 0; i < kCopies; ++i) values[static_cast<size_t>(i)] = 0.5f * static_cast<float>(i) - 7.0f;
  DeviceBuffer d = from_host(values);
  DeviceBuffer host = backend_->allocate_host(kCopies * sizeof(float));
  std::vector<int64_t> marks;
  for (int i = 0; i < kCopies; ++i) {
    backend_->queue_copy_to_host(host.f32() + i, d.f32() + i, sizeof(float));
    marks.push_back(backend_->mark());
    if (i > 0) EXPECT_GT(marks.back(), marks[marks.size() - 2]);
  }
  backend_->wait_for_mark(marks.front());  // long overwritten: waits through a later event
  EXPECT_EQ(host.f32()[0], values[0]);
  backend_->wait_for_mark(marks.back());
  for (int i = 0; i < kCopies; ++i) EXPECT_EQ(host.f32()[i], values[static_cast<size_t>(i)]) << i;
  EXPECT_THROW(backend_->wait_for_mark(marks.back() + 1), std::exception);
  backend_->wait_for_mark(0);  // nothing to wait for
}

// InputStaging::release_staged: a staged copy into a buffer waits (on the device) for the compute work
// queued before that read the buffer, however long it runs. The compute queue is kept busy for
// many milliseconds before it copies the staged buffer out; without the order the staging copy
// (microseconds, its own stream) would overwrite the buffer first.
TEST_F(CudaBackendTest, AStagedCopyWaitsForTheLastReaderOfItsBuffer) {
  const int64_t n = 1 << 20;
  const std::vector<float> first(static_cast<size_t>(n), 1.0f), second(static_cast<size_t>(n), 2.0f);
  DeviceBuffer pinned_first = backend_->allocate_host(n * sizeof(float));
  DeviceBuffer pinned_second = backend_->allocate_host(n * sizeof(float));
  std::memcpy(pinned_first.data(), first.data(), n * sizeof(float));
  std::memcpy(pinned_second.data(), second.data(), n * sizeof(float));
  DeviceBuffer staged = backend_->allocate(n * sizeof(float));
  DeviceBuffer input = backend_->allocate(n * sizeof(float));
  backend_->stage_from_host(staged.data(), pinned_first.data(), n * sizeof(float));
  backend_->staged_copies_done();
  const int64_t busy_n = int64_t{1} << 26;  // 256 MiB, 64 passes: tens of ms on any GPU
  DeviceBuffer busy_x = backend_->allocate(busy_n * sizeof(float));
  DeviceBuffer busy_y = backend_->allocate(busy_n * sizeof(float));
  for (int pass = 0; pass < 64; ++pass) backend_->axpby(busy_n, 0.5f, busy_x.f32(), 0.5f, busy_y.f32());
  backend_->wait_for_staged();
  backend_->copy(input.data(), staged.data(), n * sizeof(float));  // the last reader of `staged`
  backend_->release_staged();
  backend_->stage_from_host(staged.data(), pinned_second.data(), n * sizeof(float));
  backend_->synchronize();
  backend_->staged_copies_done();
  expect_same_values(to_host(input.data(), n), first, "the buffer as it was before the next staging");
  expect_same_values(to_host(staged.data(), n), second, "the next staging");
}

// Loss scaling decided on the device (loss_reads: log): unscale_check, sgd_step_if_finite and
// update_loss_scale on the GPU take the decisions, and leave the weights, velocity and state,
// that the host's (HostLossScaling over the ref backend) take, bit for bit, over finite steps,
// an overflow, and the growth of the scale.
TEST_F(CudaBackendTest, LossScalingOnTheDeviceDecidesAsTheHost) {
  const int64_t n = (1 << 16) + 5;
  auto ref = make_backend("ref");
  HostLossScaling on_host(*ref);
  const std::vector<float> weights0 = spread_values(n, 21), velocity0(static_cast<size_t>(n), 0.0f);
  const LossScaleRule rule{true, 2, 1.0f / 16384.0f, 16777216.0f};
  DeviceBuffer w = from_host(weights0), v = from_host(velocity0), g = backend_->allocate(n * sizeof(float));
  DeviceBuffer state_d = backend_->allocate(sizeof(LossScaleState));
  LossScaleState initial;
  initial.scale = 4096.0f;
  backend_->copy_from_host(state_d.data(), &initial, sizeof(initial));
  auto* state = static_cast<LossScaleState*>(state_d.data());
  std::vector<float> hw = weights0, hv = velocity0;
  LossScaleState host = initial;
  for (int step = 0; step < 6; ++step) {
    std::vector<float> grads = spread_values(n, 100 + step);
    for (float& x : grads) x *= host.scale;
    if (step == 2) grads[n / 2] = std::numeric_limits<float>::infinity();  // an overflow: skipped, halved
    backend_->copy_from_host(g.data(), grads.data(), grads.size() * sizeof(float));
    backend_->unscale_check(n, state, g.f32());
    backend_->sgd_step_if_finite(state, n, 0.01f, 0.9f, 1e-4f, true, w.f32(), g.f32(), v.f32());
    backend_->update_loss_scale(state, rule);
    on_host.unscale_check(n, &host, grads.data());
    on_host.sgd_step_if_finite(&host, n, 0.01f, 0.9f, 1e-4f, true, hw.data(), grads.data(), hv.data());
    on_host.update_loss_scale(&host, rule);
  }
  LossScaleState got;
  backend_->copy_to_host(&got, state_d.data(), sizeof(got));
  EXPECT_EQ(got.scale, host.scale);
  EXPECT_EQ(got.skipped, 1);
  EXPECT_EQ(host.skipped, 1);
  EXPECT_EQ(got.good_steps, host.good_steps);
  EXPECT_EQ(host.scale, 8192.0f) << "doubled after steps 1 and 4, halved at step 2 (growth interval 2)";
  expect_same_values(to_host(w.data(), n), hw, "weights");
  expect_same_values(to_host(v.data(), n), hv, "velocity");
}

TEST_F(CudaBackendTest, DescribeNamesTheDevice) {
  const DeviceDescription d = backend_->describe();
  EXPECT_EQ(d.backend, "cuda");
  EXPECT_EQ(d.device, "cuda:0");
  EXPECT_FALSE(d.name.empty());
  EXPECT_EQ(d.isa.rfind("sm_", 0), 0u) << d.isa;
  EXPECT_FALSE(d.generation.empty());
  EXPECT_GT(d.memory_bytes, 0);
  EXPECT_GT(d.compute_units, 0);
  EXPECT_FALSE(d.host_accessible);
  EXPECT_EQ(d.collectives, std::vector<std::string>{"nccl"});
  std::vector<std::string> names;
  for (const auto& [library, version] : d.libraries) {
    names.push_back(library);
    EXPECT_FALSE(version.empty()) << library;
    EXPECT_NE(version.find('.'), std::string::npos) << library << " " << version;
  }
  EXPECT_EQ(names, (std::vector<std::string>{"cuda_driver", "cuda_runtime", "cudnn", "cublas", "nccl"}));
  std::cout << "device: " << d.name << " " << d.isa << " " << d.generation << "\n";
}

TEST_F(CudaBackendTest, PrecisionsFollowTheComputeCapability) {
  const DeviceDescription d = backend_->describe();
  const int cc = std::stoi(d.isa.substr(3));
  EXPECT_TRUE(backend_->supports(Op::conv, Precision::fp32));
  EXPECT_EQ(backend_->supports(Op::fc, Precision::fp16), cc >= 70);
  EXPECT_EQ(backend_->supports(Op::fc, Precision::bf16), cc >= 80);
  EXPECT_EQ(backend_->supports(Op::conv, Precision::tf32), cc >= 80);
  EXPECT_EQ(d.bf16_native, cc >= 80);
  for (Precision p : {Precision::fp32, Precision::tf32, Precision::fp16, Precision::bf16}) {
    if (backend_->supports(Op::conv, p)) {
      backend_->set_precision(p);
      EXPECT_EQ(backend_->precision(), p);
    } else {
      EXPECT_THROW(backend_->set_precision(p), ConfigError) << precision_name(p);
    }
  }
}

}  // namespace
}  // namespace ts
