// The cuDNN-backed ops of the CUDA backend (conv, pool, batch norm, activations) against the
// reference kernels (backend/ref/ref_kernels.h) at fp32, tf32, fp16 and bf16 over many shapes;
// finite-difference gradient checks of conv and batch norm through the CUDA ops (fp32); the plan
// notes and the workspace bound (a limit of 0 still plans, with the zero-workspace algorithms).
// Host data goes in and out through the backend's copies; f16/bf16 tensors are converted on the
// device (cuda::convert), NHWC ones reordered there (backend.reorder). Outputs are pre-filled
// with NaN so an element an op forgets fails. Ops are planned as a net plans them: inputs and
// outputs in the layout the backend chooses for the precision (NHWC for 4-D tensors at tf32,
// fp16 and bf16; test_cuda_nhwc.cpp covers the other layout at the edges).
//
// Every case that runs ops needs a CUDA device and skips (GTEST_SKIP, with the reason) without
// one, or when the device lacks the precision (bf16/tf32 before sm_80). The PlanningErrors
// cases need no device: the ops reject bad descs before they touch CUDA.
//
// Tolerances, relative to the reference tensor's scale: |got - want| <= tol (|want| + max|want|)
//   fp32 1e-5  true fp32 (CUDNN_FMA_MATH): a TF32 algorithm misses it by two orders of magnitude;
//   tf32 2e-3  inputs rounded to 10-bit mantissas, f32 accumulation;
//   fp16 2e-3  tensors stored with 11-bit mantissas, f32 accumulation;
//   bf16 2e-2  tensors stored with 8-bit mantissas, f32 accumulation.
#include <gtest/gtest.h>

#include <iostream>

#include <algorithm>
#include <cctype>
#include <cmath>
#include <cstring>
#include <functional>
#include <limits>
#include <memory>
#include <string>
#include <tuple>
#include <vector>

#include "backend/backend.h"
#include "backend/cuda/cuda_backend.h"
#include "backend/cuda/cuda_check.h"
#include "backend/cuda/cuda_kernels.h"
#include "backend/cuda/cuda_layout.h"
#include "backend/cuda/cuda_ops.h"
#include "backend/ref/ref_kernels.h"
#include "core/error.h"
#include "core/rng.h"

namespace ts {
namespace {

using Vec = std::vector<float>;
using ::testing::Combine;
using ::testing::Values;

// ---- device, precisions, tolerances ---------------------------------------------------------

// One backend per test process (CTest runs each case as its own process), never destroyed: ops
// and buffers of a test must not outlive it, and CUDA's own teardown at exit frees it.
CudaBackend& gpu() {
  static CudaBackend* backend = new CudaBackend(0);
  return *backend;
}

#define SKIP_WITHOUT_DEVICE()                                                                \
  do {                                                                                       \
    if (CudaBackend::device_count() == 0)                                                    \
      GTEST_SKIP() << "no CUDA device on this machine (the cuDNN ops need one; run the gpu " \
                      "tests on a GPU machine)";                                             \
  } while (0)

// Skips without a device or without the precision, else sets it for the ops planned next.
#define USE_PRECISION(p)                                                                              \
  do {                                                                                                \
    SKIP_WITHOUT_DEVICE();                                                                            \
    if (!gpu().supports(Op::conv, p))                                                                 \
      GTEST_SKIP() << precision_name(p) << " is not supported on " << gpu().describe().name << " ("   \
                   << gpu().describe().isa << ")";                                                    \
    gpu().set_precision(p);                                                                           \
  } while (0)

DType act_dtype(Precision p) {
  return p == Precision::fp16 ? DType::f16 : p == Precision::bf16 ? DType::bf16 : DType::f32;
}

double tolerance(Precision p) {
  switch (p) {
    case Precision::fp32: return 1e-5;
    case Precision::tf32: return 2e-3;
    case Precision::fp16: return 2e-3;
    case Precision::bf16: return 2e-2;
  }
  return 0.0;
}

// What the backend chooses for a 4-D activation at `p` (cuda_layout.h): NHWC on tensor cores.
TensorDesc act_desc(const Shape& dims, Precision p) {
  return p != Precision::fp32 && dims.rank() == 4 ? cuda::nhwc_desc(dims, act_dtype(p))
                                                  : TensorDesc::plain(dims, act_dtype(p));
}

const auto kAllPrecisions = Values(Precision::fp32, Precision::tf32, Precision::fp16, Precision::bf16);

// ---- host data ------------------------------------------------------------------------------

Vec random_vec(size_t n, uint64_t seed, float lo = -1.0f, float hi = 1.0f) {
  Rng rng(seed);
  Vec v(n);
  for (float& x : v) x = lo + (hi - lo) * static_cast<float>(rng.uniform());
  return v;
}
Vec nan_vec(size_t n) { return Vec(n, std::numeric_limits<float>::quiet_NaN()); }

// Planes of `plane` values, each a random choice of distinct k/32 for k in [-128, 128): exact in
// f16 and bf16, so max pooling has no ties at any precision (plane <= 256).
Vec distinct_planes(size_t n, size_t plane, uint64_t seed) {
  Rng rng(seed);
  Vec v(n);
  std::vector<int> ladder(256);
  for (size_t p = 0; p < n; p += plane) {
    for (int k = 0; k < 256; ++k) ladder[static_cast<size_t>(k)] = k - 128;
    for (size_t i = 0; i < plane && p + i < n; ++i) {  // partial Fisher-Yates draw
      const size_t j = i + static_cast<size_t>(rng.below(256 - i));
      std::swap(ladder[i], ladder[j]);
      v[p + i] = static_cast<float>(ladder[i]) / 32.0f;
    }
  }
  return v;
}

void expect_close(const Vec& got, const Vec& want, double rtol, const std::string& what) {
  ASSERT_EQ(got.size(), want.size()) << what;
  double scale = 0.0;
  for (float w : want) scale = std::max(scale, double(std::fabs(w)));
  size_t bad = 0;
  for (size_t i = 0; i < got.size(); ++i) {
    const double tol = rtol * (std::fabs(want[i]) + scale) + 1e-7;
    if (!(std::fabs(double(got[i]) - double(want[i])) <= tol) && ++bad <= 5)
      ADD_FAILURE() << what << ": element " << i << " cuda " << got[i] << " ref " << want[i] << " (tol " << tol << ")";
  }
  EXPECT_EQ(bad, 0u) << what << ": " << bad << " of " << got.size() << " elements differ";
}

// ---- device data ----------------------------------------------------------------------------

// A plain device tensor of `dtype` (and the memory it views).
struct DeviceTensor {
  DeviceBuffer buffer;
  Tensor tensor;
  void* data() const { return tensor.data; }
};

// `host` (f32) on the device as `dtype`, converted there.
DeviceTensor upload(const Vec& host, const Shape& dims, DType dtype) {
  CudaBackend& b = gpu();
  const size_t n = host.size();
  EXPECT_EQ(static_cast<int64_t>(n), dims.numel()) << dims.str();
  DeviceTensor t;
  t.buffer = b.allocate(n * dtype_bytes(dtype));
  if (dtype == DType::f32) {
    b.copy_from_host(t.buffer.data(), host.data(), n * sizeof(float));
  } else {
    DeviceBuffer staging = b.allocate(n * sizeof(float));
    b.copy_from_host(staging.data(), host.data(), n * sizeof(float));
    cuda::convert(staging.data(), DType::f32, t.buffer.data(), dtype, static_cast<int64_t>(n), b.stream());
    b.synchronize();
  }
  t.tensor = Tensor(t.buffer.data(), TensorDesc::plain(dims, dtype));
  return t;
}
// `host` (f32, logical order) on the device in `desc` (plain or NHWC), reordered there.
DeviceTensor upload(const Vec& host, const TensorDesc& desc) {
  DeviceTensor plain = upload(host, desc.dims, desc.dtype);
  if (desc.is_plain()) return plain;
  DeviceTensor t;
  t.buffer = gpu().allocate(desc.bytes);
  t.tensor = Tensor(t.buffer.data(), desc);
  gpu().reorder(plain.tensor, t.tensor);
  gpu().synchronize();
  return t;
}
DeviceTensor upload_f32(const Vec& host) { return upload(host, Shape{static_cast<int64_t>(host.size())}, DType::f32); }

// A device tensor's values as f32 in logical order on the host (waits for the stream).
Vec download(const Tensor& t) {
  CudaBackend& b = gpu();
  const int64_t n = t.desc.numel();
  if (!t.desc.is_plain()) {
    DeviceBuffer plain = b.allocate(static_cast<size_t>(n) * sizeof(float));
    const Tensor as_plain(plain.data(), TensorDesc::plain(t.desc.dims));
    b.reorder(t, as_plain);
    return download(as_plain);
  }
  Vec host(static_cast<size_t>(n));
  if (t.desc.dtype == DType::f32) {
    b.copy_to_host(host.data(), t.data, host.size() * sizeof(float));
    return host;
  }
  DeviceBuffer staging = b.allocate(host.size() * sizeof(float));
  cuda::convert(t.data, t.desc.dtype, staging.data(), DType::f32, n, b.stream());
  b.copy_to_host(host.data(), staging.data(), host.size() * sizeof(float));
  return host;
}
Vec download_f32(const void* data, size_t n) {
  Vec host(n);
  gpu().copy_to_host(host.data(), data, n * sizeof(float));
  return host;
}

// "fp16_conv_mb2_ic3..." from a (precision, descriptor) parameter.
template <typename Param>
std::string case_name(const ::testing::TestParamInfo<Param>& info) {
  std::string name = std::string(precision_name(std::get<0>(info.param))) + "_" + std::get<1>(info.param);
  for (char& c : name)
    if (!std::isalnum(static_cast<unsigned char>(c))) c = '_';
  return name;
}

using PrecisionAndDesc = std::tuple<Precision, const char*>;

// ---- convolution ----------------------------------------------------------------------------

Shape conv_src(const ConvDesc& d) { return Shape{d.mb, d.ic, d.ih, d.iw}; }
Shape conv_dst(const ConvDesc& d) { return Shape{d.mb, d.oc, d.oh(), d.ow()}; }

class CudaConv : public ::testing::TestWithParam<PrecisionAndDesc> {};

// Planned as a net plans it (src in the activation type, dst "any"): two forwards with different
// src buffers, then the backward of the second (which may reuse what that forward converted).
void check_conv_against_ref(Precision precision, const char* text, double tol_factor = 1.0) {
  const ConvDesc d = ConvDesc::parse(text);
  const std::string name = d.str() + " at " + precision_name(precision);
  const DType t = act_dtype(precision);
  const double tol = tolerance(precision) * tol_factor;
  const size_t n_src = conv_src(d).numel(), n_dst = conv_dst(d).numel(), n_wei = d.weight_count();
  const TensorDesc src_desc = act_desc(conv_src(d), precision);
  auto op = gpu().plan_conv(d, src_desc, TensorDesc::any(conv_dst(d)));
  // Grouped convolutions compute (and write "any" outputs) in NCHW (cuda_conv.cpp).
  const TensorDesc dst_desc = d.groups == 1 ? act_desc(conv_dst(d), precision) : TensorDesc::plain(conv_dst(d), t);
  ASSERT_EQ(op->dst_desc(), dst_desc) << name;
  const Vec wei = random_vec(n_wei, 2), bia = random_vec(d.oc, 3), diff_dst = random_vec(n_dst, 4);
  const float* bia_host = d.bias ? bia.data() : nullptr;
  DeviceTensor wei_dev = upload_f32(wei), bia_dev = upload_f32(bia);
  const float* bia_ptr = d.bias ? static_cast<const float*>(bia_dev.data()) : nullptr;
  Vec src;
  DeviceTensor src_dev;
  for (uint64_t round = 0; round < 2; ++round) {
    src = random_vec(n_src, 10 + round);
    src_dev = upload(src, src_desc);
    DeviceTensor dst_dev = upload(nan_vec(n_dst), dst_desc);
    op->forward(src_dev.tensor, wei_dev.tensor.f32(), bia_ptr, dst_dev.tensor);
    Vec dst_ref(n_dst);
    ref::conv_forward(d, src.data(), wei.data(), bia_host, dst_ref.data());
    expect_close(download(dst_dev.tensor), dst_ref, tol, name + " forward round " + std::to_string(round));
  }
  DeviceTensor diff_dst_dev = upload(diff_dst, dst_desc);
  DeviceTensor diff_src_dev = upload(nan_vec(n_src), src_desc);
  DeviceTensor diff_wei_dev = upload_f32(nan_vec(n_wei)), diff_bia_dev = upload_f32(nan_vec(d.oc));
  float* diff_bia_ptr = d.bias ? diff_bia_dev.tensor.f32() : nullptr;
  op->backward(src_dev.tensor, diff_dst_dev.tensor, wei_dev.tensor.f32(), diff_src_dev.tensor,
               diff_wei_dev.tensor.f32(), diff_bia_ptr);
  Vec diff_src_ref(n_src), diff_wei_ref(n_wei), diff_bia_ref(d.oc);
  ref::conv_backward_data(d, diff_dst.data(), wei.data(), diff_src_ref.data());
  ref::conv_backward_weights(d, src.data(), diff_dst.data(), diff_wei_ref.data(), d.bias ? diff_bia_ref.data() : nullptr);
  expect_close(download(diff_src_dev.tensor), diff_src_ref, tol, name + " backward_data");
  expect_close(download_f32(diff_wei_dev.data(), n_wei), diff_wei_ref, tol, name + " backward_weights");
  if (d.bias) expect_close(download_f32(diff_bia_dev.data(), d.oc), diff_bia_ref, tol, name + " backward_bias");
  // Without diff_src (the first layer's case) only the parameter gradients are written.
  DeviceTensor diff_wei_only = upload_f32(nan_vec(n_wei));
  op->backward(src_dev.tensor, diff_dst_dev.tensor, wei_dev.tensor.f32(), Tensor(), diff_wei_only.tensor.f32(),
               diff_bia_ptr);
  expect_close(download_f32(diff_wei_only.data(), n_wei), diff_wei_ref, tol, name + " backward_weights only");
}

TEST_P(CudaConv, ForwardBackwardAgainstRef) {
  const auto [precision, text] = GetParam();
  USE_PRECISION(precision);
  check_conv_against_ref(precision, text);
}

// cuda.conv_api: graph, the graph API's engines (cuda_conv_graph.h), against the same oracle; the
// plan note names an engine for every direction, or says why the legacy calls ran instead.
TEST_P(CudaConv, GraphEnginesForwardBackwardAgainstRef) {
  const auto [precision, text] = GetParam();
  USE_PRECISION(precision);
  struct Restore {
    ~Restore() { gpu().set_conv_api(ConvApi::legacy, false); }
  } restore;
  gpu().set_conv_api(ConvApi::graph, false);
  const size_t before = gpu().plan_notes().size();
  check_conv_against_ref(precision, text);
  const std::vector<std::string> notes = gpu().plan_notes();
  ASSERT_GT(notes.size(), before);
  const std::string& note = notes[before];
  const bool engines = note.find("fwd=ENGINE_") != std::string::npos &&
                       note.find("bwd_data=ENGINE_") != std::string::npos &&
                       note.find("bwd_filter=ENGINE_") != std::string::npos;
  EXPECT_TRUE(engines || note.find(" graph_refused=") != std::string::npos) << note;
  const ConvDesc d = ConvDesc::parse(text);
  if (d.groups == 1 && d.ic % 8 == 0 && d.oc % 8 == 0)
    EXPECT_TRUE(engines) << "an ungrouped convolution of tensor-core channel counts has engines: " << note;
  EXPECT_EQ(note.find(",reduced)"), std::string::npos) << "no reduced-precision reduction unless asked: " << note;
  std::cout << "[ graph    ] " << note << "\n";
}

// cuda.reduced_precision_reduction: engines that reduce in fp16/bf16 may be chosen too (PyTorch's
// filter allows them). Against the same oracle within 4x the precision's tolerance (partial sums
// rounded to 8 or 11 bits); the plan notes mark the engines that do (",reduced").
TEST_P(CudaConv, GraphEnginesWithReducedPrecisionReductionAgainstRef) {
  const auto [precision, text] = GetParam();
  USE_PRECISION(precision);
  if (precision != Precision::fp16 && precision != Precision::bf16)
    GTEST_SKIP() << "reduced-precision reductions are a choice of fp16 and bf16 only";
  struct Restore {
    ~Restore() { gpu().set_conv_api(ConvApi::legacy, false); }
  } restore;
  gpu().set_conv_api(ConvApi::graph, true);
  const size_t before = gpu().plan_notes().size();
  check_conv_against_ref(precision, text, 4.0);
  const std::vector<std::string> notes = gpu().plan_notes();
  ASSERT_GT(notes.size(), before);
  std::cout << "[ reduced  ] " << notes[before] << "\n";
}

// Conv shapes: padding on a non-square input, batch 1 with stride 2 and groups, depthwise,
// 1x1 (stride 1 and 2), 5x5 with a fused ReLU, an asymmetric kernel and stride, a tensor-core
// sized layer with a fused ReLU. (ConvDesc has no dilation.)
const auto kConvShapes = Values("conv:mb2_ic3oc8_ih7iw5_kh3kw3_sh1sw1_ph1pw1_g1",
                                "conv:mb1_ic4oc6_ih9iw9_kh3kw3_sh2sw2_ph0pw0_g2_nobias",
                                "conv:mb2_ic8oc8_ih8iw8_kh3kw3_sh1sw1_ph1pw1_g8",
                                "conv:mb2_ic8oc16_ih5iw5_kh1kw1_sh1sw1_ph0pw0_g1_nobias",
                                "conv:mb2_ic8oc4_ih7iw7_kh1kw1_sh2sw2_ph0pw0_g1",
                                "conv:mb3_ic16oc32_ih14iw14_kh5kw5_sh1sw1_ph2pw2_g1_relu",
                                "conv:mb2_ic2oc2_ih6iw8_kh3kw1_sh2sw1_ph1pw0_g1",
                                "conv:mb4_ic32oc64_ih16iw16_kh3kw3_sh1sw1_ph1pw1_g1_relu");
INSTANTIATE_TEST_SUITE_P(Shapes, CudaConv, Combine(kAllPrecisions, kConvShapes), case_name<PrecisionAndDesc>);

class CudaConvF32Edges : public ::testing::TestWithParam<PrecisionAndDesc> {};

// In fp16/bf16 runs the first conv reads the f32 input image: the op converts src itself, and
// honours a fixed plain f32 dst (and diff_src in src's f32 desc).
TEST_P(CudaConvF32Edges, ConvertsF32SrcAndFixedF32Dst) {
  const auto [precision, text] = GetParam();
  USE_PRECISION(precision);
  const ConvDesc d = ConvDesc::parse(text);
  const std::string name = d.str() + " at " + precision_name(precision) + " with f32 edges";
  const double tol = tolerance(precision);
  const size_t n_src = conv_src(d).numel(), n_dst = conv_dst(d).numel(), n_wei = d.weight_count();
  const TensorDesc f32_dst = TensorDesc::plain(conv_dst(d));
  auto op = gpu().plan_conv(d, TensorDesc::plain(conv_src(d)), f32_dst);
  ASSERT_EQ(op->dst_desc(), f32_dst) << name;
  const Vec src = random_vec(n_src, 5), wei = random_vec(n_wei, 6), bia = random_vec(d.oc, 7);
  const Vec diff_dst = random_vec(n_dst, 8);
  DeviceTensor src_dev = upload(src, conv_src(d), DType::f32), wei_dev = upload_f32(wei), bia_dev = upload_f32(bia);
  DeviceTensor dst_dev = upload(nan_vec(n_dst), conv_dst(d), DType::f32);
  op->forward(src_dev.tensor, wei_dev.tensor.f32(), d.bias ? bia_dev.tensor.f32() : nullptr, dst_dev.tensor);
  Vec dst_ref(n_dst);
  ref::conv_forward(d, src.data(), wei.data(), d.bias ? bia.data() : nullptr, dst_ref.data());
  expect_close(download(dst_dev.tensor), dst_ref, tol, name + " forward");
  DeviceTensor diff_dst_dev = upload(diff_dst, conv_dst(d), DType::f32);
  DeviceTensor diff_src_dev = upload(nan_vec(n_src), conv_src(d), DType::f32);
  DeviceTensor diff_wei_dev = upload_f32(nan_vec(n_wei)), diff_bia_dev = upload_f32(nan_vec(d.oc));
  op->backward(src_dev.tensor, diff_dst_dev.tensor, wei_dev.tensor.f32(), diff_src_dev.tensor,
               diff_wei_dev.tensor.f32(), d.bias ? diff_bia_dev.tensor.f32() : nullptr);
  Vec diff_src_ref(n_src), diff_wei_ref(n_wei), diff_bia_ref(d.oc);
  ref::conv_backward_data(d, diff_dst.data(), wei.data(), diff_src_ref.data());
  ref::conv_backward_weights(d, src.data(), diff_dst.data(), diff_wei_ref.data(), d.bias ? diff_bia_ref.data() : nullptr);
  expect_close(download(diff_src_dev.tensor), diff_src_ref, tol, name + " backward_data");
  expect_close(download_f32(diff_wei_dev.data(), n_wei), diff_wei_ref, tol, name + " backward_weights");
  if (d.bias) expect_close(download_f32(diff_bia_dev.data(), d.oc), diff_bia_ref, tol, name + " backward_bias");
}

INSTANTIATE_TEST_SUITE_P(MixedPrecision, CudaConvF32Edges,
                         Combine(Values(Precision::fp16, Precision::bf16),
                                 Values("conv:mb2_ic3oc8_ih9iw7_kh3kw3_sh2sw2_ph1pw1_g1_relu",
                                        "conv:mb1_ic4oc4_ih6iw6_kh1kw1_sh1sw1_ph0pw0_g2_nobias")),
                         case_name<PrecisionAndDesc>);

// ---- pooling --------------------------------------------------------------------------------

class CudaPool : public ::testing::TestWithParam<PrecisionAndDesc> {};

TEST_P(CudaPool, ForwardBackwardAgainstRef) {
  const auto [precision, text] = GetParam();
  USE_PRECISION(precision);
  const PoolDesc d = PoolDesc::parse(text);
  const std::string name = d.str() + " at " + precision_name(precision);
  const Shape src_dims{d.mb, d.c, d.ih, d.iw}, dst_dims{d.mb, d.c, d.oh(), d.ow()};
  const size_t n_src = src_dims.numel(), n_dst = dst_dims.numel();
  const TensorDesc src_desc = act_desc(src_dims, precision), dst_desc = act_desc(dst_dims, precision);
  auto op = gpu().plan_pool(d, src_desc, TensorDesc::any(dst_dims));
  ASSERT_EQ(op->dst_desc(), dst_desc) << name;
  EXPECT_EQ(op->workspace_bytes(), 0u) << name << ": cuDNN's backward reads src and dst, no argmax workspace";
  const Vec src = distinct_planes(n_src, d.ih * d.iw, 30), diff_dst = random_vec(n_dst, 31);
  DeviceTensor src_dev = upload(src, src_desc), dst_dev = upload(nan_vec(n_dst), dst_desc);
  op->forward(src_dev.tensor, dst_dev.tensor, nullptr);
  Vec dst_ref(n_dst), diff_src_ref(n_src);
  std::vector<unsigned char> ws_ref(ref::pool_workspace_bytes(d) + 1);
  ref::pool_forward(d, src.data(), dst_ref.data(), ws_ref.data());
  expect_close(download(dst_dev.tensor), dst_ref, tolerance(precision), name + " forward");
  DeviceTensor diff_dst_dev = upload(diff_dst, dst_desc), diff_src_dev = upload(nan_vec(n_src), src_desc);
  op->backward(diff_dst_dev.tensor, nullptr, diff_src_dev.tensor);
  ref::pool_backward(d, diff_dst.data(), ws_ref.data(), diff_src_ref.data());
  expect_close(download(diff_src_dev.tensor), diff_src_ref, tolerance(precision), name + " backward");
}

// Max 2x2/2; max 3x3/2 padded on a non-square input (ResNet's stem, batch 1); average 3x3/1
// padded (padding excluded from the count); a global average pool (window = plane); an average
// pool with unequal windows, strides and padding.
const auto kPoolShapes = Values("pool:max_mb2c3_ih8iw8_kh2kw2_sh2sw2_ph0pw0",
                                "pool:max_mb1c4_ih7iw9_kh3kw3_sh2sw2_ph1pw1",
                                "pool:avg_mb2c3_ih7iw7_kh3kw3_sh1sw1_ph1pw1",
                                "pool:avg_mb2c8_ih7iw7_kh7kw7_sh1sw1_ph0pw0",
                                "pool:avg_mb3c2_ih9iw6_kh3kw2_sh3sw2_ph1pw0");
INSTANTIATE_TEST_SUITE_P(Shapes, CudaPool, Combine(kAllPrecisions, kPoolShapes), case_name<PrecisionAndDesc>);

TEST(CudaPoolContract, BackwardBeforeForwardIsAnError) {
  SKIP_WITHOUT_DEVICE();
  gpu().set_precision(Precision::fp32);
  const PoolDesc d = PoolDesc::parse("pool:max_mb1c1_ih4iw4_kh2kw2_sh2sw2_ph0pw0");
  auto op = gpu().plan_pool(d, TensorDesc::plain(Shape{1, 1, 4, 4}), TensorDesc::any(Shape{1, 1, 2, 2}));
  DeviceTensor diff_dst = upload(Vec(4, 1.0f), Shape{1, 1, 2, 2}, DType::f32);
  DeviceTensor diff_src = upload(Vec(16, 0.0f), Shape{1, 1, 4, 4}, DType::f32);
  EXPECT_THROW(op->backward(diff_dst.tensor, nullptr, diff_src.tensor), RuntimeError);
}

// ---- batch normalisation --------------------------------------------------------------------

Shape bn_dims(const BnDesc& d) {
  return d.h == 1 && d.w == 1 && d.mb > 1 ? Shape{d.mb, d.c} : Shape{d.mb, d.c, d.h, d.w};  // (mb,c) after an fc
}

class CudaBatchNorm : public ::testing::TestWithParam<PrecisionAndDesc> {};

// Training forward (dst, batch mean, biased batch variance), inference forward with given
// statistics, the backward after the training forward, and the backward of a fresh op (no
// forward of its own: cuDNN recomputes the statistics from src).
TEST_P(CudaBatchNorm, ForwardBackwardAgainstRef) {
  const auto [precision, text] = GetParam();
  USE_PRECISION(precision);
  const BnDesc d = BnDesc::parse(text);
  const std::string name = d.str() + " at " + precision_name(precision);
  const double tol = tolerance(precision);
  const Shape dims = bn_dims(d);
  const size_t n = dims.numel(), c = d.c;
  const TensorDesc x_desc = act_desc(dims, precision);
  auto op = gpu().plan_batchnorm(d, x_desc, TensorDesc::any(dims));
  ASSERT_EQ(op->dst_desc(), x_desc) << name;
  const Vec src = random_vec(n, 40, -0.5f, 1.5f), scale = random_vec(c, 41, 0.5f, 1.5f), shift = random_vec(c, 42);
  const Vec diff_dst = random_vec(n, 43);
  DeviceTensor src_dev = upload(src, x_desc), scale_dev = upload_f32(scale), shift_dev = upload_f32(shift);
  DeviceTensor dst_dev = upload(nan_vec(n), x_desc), mean_dev = upload_f32(nan_vec(c)), var_dev = upload_f32(nan_vec(c));
  op->forward_training(src_dev.tensor, scale_dev.tensor.f32(), shift_dev.tensor.f32(), dst_dev.tensor,
                       mean_dev.tensor.f32(), var_dev.tensor.f32());
  Vec dst_ref(n), mean_ref(c), var_ref(c);
  ref::batchnorm_forward_training(d, src.data(), scale.data(), shift.data(), dst_ref.data(), mean_ref.data(),
                                  var_ref.data());
  expect_close(download(dst_dev.tensor), dst_ref, tol, name + " forward_training dst");
  expect_close(download_f32(mean_dev.data(), c), mean_ref, tol, name + " batch mean");
  expect_close(download_f32(var_dev.data(), c), var_ref, tol, name + " biased batch variance");

  const Vec run_mean = random_vec(c, 44, -0.5f, 0.5f), run_var = random_vec(c, 45, 0.5f, 1.5f);
  DeviceTensor run_mean_dev = upload_f32(run_mean), run_var_dev = upload_f32(run_var);
  DeviceTensor infer_dev = upload(nan_vec(n), x_desc);
  op->forward_inference(src_dev.tensor, scale_dev.tensor.f32(), shift_dev.tensor.f32(), run_mean_dev.tensor.f32(),
                        run_var_dev.tensor.f32(), infer_dev.tensor);
  Vec infer_ref(n);
  ref::batchnorm_forward_inference(d, src.data(), scale.data(), shift.data(), run_mean.data(), run_var.data(),
                                   infer_ref.data());
  expect_close(download(infer_dev.tensor), infer_ref, tol, name + " forward_inference");

  Vec diff_src_ref(n), diff_scale_ref(c), diff_shift_ref(c);
  ref::batchnorm_backward(d, src.data(), diff_dst.data(), scale.data(), mean_ref.data(), var_ref.data(),
                          diff_src_ref.data(), diff_scale_ref.data(), diff_shift_ref.data());
  DeviceTensor diff_dst_dev = upload(diff_dst, x_desc);
  auto fresh = gpu().plan_batchnorm(d, x_desc, TensorDesc::any(dims));
  for (BatchNormOp* which : {op.get(), fresh.get()}) {
    const std::string what = name + (which == op.get() ? " backward" : " backward of a fresh op");
    DeviceTensor diff_src_dev = upload(nan_vec(n), x_desc);
    DeviceTensor diff_scale_dev = upload_f32(nan_vec(c)), diff_shift_dev = upload_f32(nan_vec(c));
    which->backward(src_dev.tensor, diff_dst_dev.tensor, scale_dev.tensor.f32(), mean_dev.tensor.f32(),
                    var_dev.tensor.f32(), diff_src_dev.tensor, diff_scale_dev.tensor.f32(),
                    diff_shift_dev.tensor.f32());
    expect_close(download(diff_src_dev.tensor), diff_src_ref, tol, what + " diff_src");
    expect_close(download_f32(diff_scale_dev.data(), c), diff_scale_ref, tol, what + " diff_scale");
    expect_close(download_f32(diff_shift_dev.data(), c), diff_shift_ref, tol, what + " diff_shift");
  }
}

// Small planes, a fused ReLU, batch 1, batch norm after an fc ((mb,c) src), a custom eps.
const auto kBnShapes = Values("bn:mb2c3_h4w5", "bn:mb4c16_h8w8_relu", "bn:mb1c8_h7w7", "bn:mb16c10_h1w1",
                              "bn:mb2c4_h3w3_eps0.001");
INSTANTIATE_TEST_SUITE_P(Shapes, CudaBatchNorm, Combine(kAllPrecisions, kBnShapes), case_name<PrecisionAndDesc>);

// ---- activations ----------------------------------------------------------------------------

class CudaEltwise : public ::testing::TestWithParam<PrecisionAndDesc> {};  // (precision, kind)

TEST_P(CudaEltwise, ForwardBackwardAgainstRef) {
  const auto [precision, kind] = GetParam();
  USE_PRECISION(precision);
  const double tol = tolerance(precision);
  // A 4-D tensor and a flat one; values in [-8, 8] (both sides of relu6's clips), none within
  // 1/64 of 0 except relu6's exact boundary values 0 and 6 (its gradient is 0 there, as ref's).
  for (const Shape& dims : {Shape{2, 4, 5, 5}, Shape{1000}}) {
    EltwiseDesc d = EltwiseDesc::parse(std::string("eltwise:") + kind + "_n" + std::to_string(dims.numel()));
    const std::string name = d.str() + " at " + precision_name(precision);
    const size_t n = dims.numel();
    Vec src = random_vec(n, 50, -8.0f, 8.0f);
    for (float& x : src)
      if (std::fabs(x) < 1.0f / 64) x = 0.5f;
    if (d.kind == EltwiseKind::relu6) src[0] = 0.0f, src[1] = 6.0f, src[2] = -6.0f;
    const Vec diff_dst = random_vec(n, 51);
    const TensorDesc x_desc = act_desc(dims, precision);  // "any" dst takes src's layout
    auto op = gpu().plan_eltwise(d, x_desc, TensorDesc::any(dims));
    ASSERT_EQ(op->dst_desc(), x_desc) << name;
    DeviceTensor src_dev = upload(src, x_desc), dst_dev = upload(nan_vec(n), x_desc);
    op->forward(src_dev.tensor, dst_dev.tensor);
    // The reference reads what the device computed on: src (and dst) as stored in t.
    const Vec src_t = download(src_dev.tensor), dst_got = download(dst_dev.tensor);
    Vec dst_ref(n), diff_src_ref(n);
    ref::eltwise_forward(d, src_t.data(), dst_ref.data());
    expect_close(dst_got, dst_ref, tol, name + " forward");
    DeviceTensor diff_dst_dev = upload(diff_dst, x_desc), diff_src_dev = upload(nan_vec(n), x_desc);
    op->backward(src_dev.tensor, dst_dev.tensor, diff_dst_dev.tensor, diff_src_dev.tensor);
    ref::eltwise_backward(d, src_t.data(), dst_got.data(), download(diff_dst_dev.tensor).data(), diff_src_ref.data());
    expect_close(download(diff_src_dev.tensor), diff_src_ref, tol, name + " backward");
  }
}

INSTANTIATE_TEST_SUITE_P(Kinds, CudaEltwise, Combine(kAllPrecisions, Values("relu", "relu6", "sigmoid")),
                         case_name<PrecisionAndDesc>);

// ---- finite-difference gradient checks (fp32) -----------------------------------------------

// Central differences of loss = sum(dst * r) for every element of `values` (uploaded to
// `device` before each forward), against `analytic`: |a - n| <= rel_tol max(|a|,|n|) + abs_tol.
void check_gradient(const std::string& what, Vec values, DeviceTensor& device, const std::function<double()>& loss,
                    const Vec& analytic, double eps, double rel_tol, double abs_tol) {
  ASSERT_EQ(values.size(), analytic.size()) << what;
  for (size_t i = 0; i < values.size(); ++i) {
    const float saved = values[i];
    auto loss_at = [&](float v) {
      values[i] = v;
      gpu().copy_from_host(device.data(), values.data(), values.size() * sizeof(float));
      return loss();
    };
    const double numeric = (loss_at(saved + float(eps)) - loss_at(saved - float(eps))) / (2.0 * eps);
    values[i] = saved;
    gpu().copy_from_host(device.data(), values.data(), values.size() * sizeof(float));
    const double err = std::fabs(analytic[i] - numeric);
    EXPECT_LE(err, rel_tol * std::max(std::fabs(double(analytic[i])), std::fabs(numeric)) + abs_tol)
        << what << " element " << i << ": analytic " << analytic[i] << " numeric " << numeric;
  }
}

double weighted_sum(const Vec& dst, const Vec& r) {
  double sum = 0.0;
  for (size_t i = 0; i < dst.size(); ++i) sum += double(dst[i]) * r[i];
  return sum;
}

TEST(CudaGradcheck, ConvThroughCudaOps) {
  USE_PRECISION(Precision::fp32);
  for (const char* text : {"conv:mb2_ic3oc4_ih5iw6_kh3kw3_sh2sw2_ph1pw1_g1", "conv:mb1_ic4oc4_ih4iw4_kh3kw3_sh1sw1_ph1pw1_g2_nobias"}) {
    const ConvDesc d = ConvDesc::parse(text);
    const size_t n_src = conv_src(d).numel(), n_dst = conv_dst(d).numel(), n_wei = d.weight_count();
    auto op = gpu().plan_conv(d, TensorDesc::plain(conv_src(d)), TensorDesc::any(conv_dst(d)));
    const Vec src = random_vec(n_src, 60), wei = random_vec(n_wei, 61), bia = random_vec(d.oc, 62);
    const Vec r = random_vec(n_dst, 63);
    DeviceTensor src_dev = upload(src, conv_src(d), DType::f32), wei_dev = upload_f32(wei), bia_dev = upload_f32(bia);
    DeviceTensor dst_dev = upload(nan_vec(n_dst), conv_dst(d), DType::f32);
    const float* bia_ptr = d.bias ? bia_dev.tensor.f32() : nullptr;
    auto loss = [&] {
      op->forward(src_dev.tensor, wei_dev.tensor.f32(), bia_ptr, dst_dev.tensor);
      return weighted_sum(download(dst_dev.tensor), r);
    };
    loss();
    DeviceTensor r_dev = upload(r, conv_dst(d), DType::f32), diff_src = upload(nan_vec(n_src), conv_src(d), DType::f32);
    DeviceTensor diff_wei = upload_f32(nan_vec(n_wei)), diff_bia = upload_f32(nan_vec(d.oc));
    op->backward(src_dev.tensor, r_dev.tensor, wei_dev.tensor.f32(), diff_src.tensor, diff_wei.tensor.f32(),
                 d.bias ? diff_bia.tensor.f32() : nullptr);
    const Vec g_src = download(diff_src.tensor), g_wei = download_f32(diff_wei.data(), n_wei);
    const Vec g_bia = download_f32(diff_bia.data(), d.oc);
    // The conv is linear in each input: central differences are exact up to f32 rounding.
    check_gradient(d.str() + " d/dsrc", src, src_dev, loss, g_src, 1e-2, 1e-3, 1e-3);
    check_gradient(d.str() + " d/dwei", wei, wei_dev, loss, g_wei, 1e-2, 1e-3, 1e-3);
    if (d.bias) check_gradient(d.str() + " d/dbia", bia, bia_dev, loss, g_bia, 1e-2, 1e-3, 1e-3);
  }
}

TEST(CudaGradcheck, BatchNormThroughCudaOps) {
  USE_PRECISION(Precision::fp32);
  for (const char* text : {"bn:mb2c3_h3w4", "bn:mb6c4_h1w1"}) {
    const BnDesc d = BnDesc::parse(text);
    const Shape dims = bn_dims(d);
    const size_t n = dims.numel(), c = d.c;
    auto op = gpu().plan_batchnorm(d, TensorDesc::plain(dims), TensorDesc::any(dims));
    const Vec src = random_vec(n, 70, -1.0f, 2.0f), scale = random_vec(c, 71, 0.5f, 1.5f), shift = random_vec(c, 72);
    const Vec r = random_vec(n, 73);
    DeviceTensor src_dev = upload(src, dims, DType::f32), scale_dev = upload_f32(scale), shift_dev = upload_f32(shift);
    DeviceTensor dst_dev = upload(nan_vec(n), dims, DType::f32), mean = upload_f32(nan_vec(c)), var = upload_f32(nan_vec(c));
    auto loss = [&] {
      op->forward_training(src_dev.tensor, scale_dev.tensor.f32(), shift_dev.tensor.f32(), dst_dev.tensor,
                           mean.tensor.f32(), var.tensor.f32());
      return weighted_sum(download(dst_dev.tensor), r);
    };
    loss();
    DeviceTensor r_dev = upload(r, dims, DType::f32), diff_src = upload(nan_vec(n), dims, DType::f32);
    DeviceTensor diff_scale = upload_f32(nan_vec(c)), diff_shift = upload_f32(nan_vec(c));
    op->backward(src_dev.tensor, r_dev.tensor, scale_dev.tensor.f32(), mean.tensor.f32(), var.tensor.f32(),
                 diff_src.tensor, diff_scale.tensor.f32(), diff_shift.tensor.f32());
    const Vec g_src = download(diff_src.tensor), g_scale = download_f32(diff_scale.data(), c);
    const Vec g_shift = download_f32(diff_shift.data(), c);
    // As the ref layers' gradient checks (test_layers_gradcheck.cpp): eps 5e-3, 1e-2 relative.
    check_gradient(d.str() + " d/dsrc", src, src_dev, loss, g_src, 5e-3, 1e-2, 2e-3);
    check_gradient(d.str() + " d/dscale", scale, scale_dev, loss, g_scale, 5e-3, 1e-2, 2e-3);
    check_gradient(d.str() + " d/dshift", shift, shift_dev, loss, g_shift, 5e-3, 1e-2, 2e-3);
  }
}

// ---- plan notes and the workspace bound -----------------------------------------------------

TEST(CudaConvPlanning, RecordsOneNotePerConvWithAlgorithmsAndWorkspace) {
  SKIP_WITHOUT_DEVICE();
  const Precision precision = gpu().supports(Op::conv, Precision::fp16) ? Precision::fp16 : Precision::fp32;
  gpu().set_precision(precision);
  const ConvDesc d = ConvDesc::parse("conv:mb8_ic16oc32_ih16iw16_kh3kw3_sh1sw1_ph1pw1_g1");
  const size_t before = gpu().plan_notes().size();
  auto op = gpu().plan_conv(d, TensorDesc::plain(conv_src(d), act_dtype(precision)), TensorDesc::any(conv_dst(d)));
  const std::vector<std::string> notes = gpu().plan_notes();
  ASSERT_EQ(notes.size(), before + 1) << "one plan note per planned conv";
  const std::string& note = notes.back();
  const std::string head = d.str() + " " + dtype_name(act_dtype(precision)) +
                           (precision == Precision::fp32 ? " nchw" : " nhwc") + ": fwd=";
  EXPECT_EQ(note.rfind(head, 0), 0u) << note;
  for (const char* key : {"bwd_data=", "bwd_filter=", " ws=", "MiB limit=", "planned_in="})
    EXPECT_NE(note.find(key), std::string::npos) << key << " missing in: " << note;
  const bool searched_or_guessed = note.find(",find,") != std::string::npos ||
                                   note.find(",heuristic)") != std::string::npos;
  EXPECT_TRUE(searched_or_guessed) << "with the default workspace limit a search or the heuristics choose: " << note;
  if (precision == Precision::fp32) EXPECT_EQ(note.find("(tensor_op"), std::string::npos) << "fp32 is FMA math: " << note;
  // The shared workspace is what the ops reserved, never more than the limit (512 MiB default).
  EXPECT_LE(gpu().workspace_bytes(), size_t{512} << 20);
}

TEST(CudaConvPlanning, Fp32NeverRunsTensorOpMath) {
  USE_PRECISION(Precision::fp32);
  const ConvDesc d = ConvDesc::parse("conv:mb8_ic32oc64_ih16iw16_kh3kw3_sh1sw1_ph1pw1_g1");
  auto op = gpu().plan_conv(d, TensorDesc::plain(conv_src(d)), TensorDesc::any(conv_dst(d)));
  const std::string note = gpu().plan_notes().back();
  ASSERT_EQ(note.rfind(d.str() + " f32 nchw: fwd=", 0), 0u) << note;
  // All three directions run true fp32 FMA math (never TF32 tensor cores).
  size_t fma = 0;
  for (size_t at = note.find("(fma,"); at != std::string::npos; at = note.find("(fma,", at + 1)) ++fma;
  EXPECT_EQ(fma, 3u) << note;
}

// A second context on the backend's stream with its own cuDNN handle and settings: planning
// under another workspace limit. Ops planned on it must go before it.
struct TestContext {
  cuda::CudaContext ctx;
  TestContext(Precision precision, size_t workspace_limit) {
    ctx.device = gpu().device();
    ctx.stream = gpu().stream();
    ctx.precision = precision;
    ctx.workspace_limit = workspace_limit;
    TS_CUDNN_CHECK(cudnnCreate(&ctx.cudnn));
    TS_CUDNN_CHECK(cudnnSetStream(ctx.cudnn, ctx.stream));
  }
  ~TestContext() {
    ctx.release_workspace();
    cudnnDestroy(ctx.cudnn);
  }
};

TEST(CudaConvPlanning, ZeroWorkspaceLimitStillPlansAndComputes) {
  SKIP_WITHOUT_DEVICE();
  for (Precision precision : {Precision::fp32, Precision::fp16}) {
    if (!gpu().supports(Op::conv, precision)) continue;
    TestContext test(precision, 0);
    for (const char* text : {"conv:mb2_ic8oc16_ih12iw12_kh3kw3_sh1sw1_ph1pw1_g1", "conv:mb2_ic8oc8_ih9iw9_kh5kw5_sh2sw2_ph2pw2_g2"}) {
      const ConvDesc d = ConvDesc::parse(text);
      const std::string name = d.str() + " at " + precision_name(precision) + " with workspace_limit=0";
      const TensorDesc src_desc = act_desc(conv_src(d), precision);
      auto op = cuda::plan_conv(test.ctx, d, src_desc, TensorDesc::any(conv_dst(d)));
      const TensorDesc dst_desc = op->dst_desc();
      ASSERT_FALSE(test.ctx.plan_notes.empty());
      const std::string& note = test.ctx.plan_notes.back();
      EXPECT_NE(note.find(" ws=0.0MiB limit=0.0MiB"), std::string::npos) << note;
      EXPECT_EQ(test.ctx.workspace_bytes(), 0u) << name << ": " << note;
      const size_t n_src = conv_src(d).numel(), n_dst = conv_dst(d).numel(), n_wei = d.weight_count();
      const Vec src = random_vec(n_src, 80), wei = random_vec(n_wei, 81), bia = random_vec(d.oc, 82);
      const Vec diff_dst = random_vec(n_dst, 83);
      DeviceTensor src_dev = upload(src, src_desc), wei_dev = upload_f32(wei), bia_dev = upload_f32(bia);
      DeviceTensor dst_dev = upload(nan_vec(n_dst), dst_desc);
      op->forward(src_dev.tensor, wei_dev.tensor.f32(), bia_dev.tensor.f32(), dst_dev.tensor);
      Vec dst_ref(n_dst), diff_src_ref(n_src), diff_wei_ref(n_wei), diff_bia_ref(d.oc);
      ref::conv_forward(d, src.data(), wei.data(), bia.data(), dst_ref.data());
      expect_close(download(dst_dev.tensor), dst_ref, tolerance(precision), name + " forward");
      DeviceTensor diff_dst_dev = upload(diff_dst, dst_desc), diff_src_dev = upload(nan_vec(n_src), src_desc);
      DeviceTensor diff_wei_dev = upload_f32(nan_vec(n_wei)), diff_bia_dev = upload_f32(nan_vec(d.oc));
      op->backward(src_dev.tensor, diff_dst_dev.tensor, wei_dev.tensor.f32(), diff_src_dev.tensor,
                   diff_wei_dev.tensor.f32(), diff_bia_dev.tensor.f32());
      ref::conv_backward_data(d, diff_dst.data(), wei.data(), diff_src_ref.data());
      ref::conv_backward_weights(d, src.data(), diff_dst.data(), diff_wei_ref.data(), diff_bia_ref.data());
      expect_close(download(diff_src_dev.tensor), diff_src_ref, tolerance(precision), name + " backward_data");
      expect_close(download_f32(diff_wei_dev.data(), n_wei), diff_wei_ref, tolerance(precision),
                   name + " backward_weights");
    }
  }
}

// cuda.algorithms: deterministic: every direction is chosen from cuDNN's deterministic algorithms
// (the plan note says so), and the backward of a convolution and of an overlapping max pooling
// gives the same bits twice (what a bit-exact resume from a checkpoint needs), close to ref.
TEST(CudaDeterministicPlanning, ConvBackwardRepeatsBitForBit) {
  SKIP_WITHOUT_DEVICE();
  for (Precision precision : {Precision::fp32, Precision::fp16}) {
    if (!gpu().supports(Op::conv, precision)) continue;
    TestContext test(precision, size_t{64} << 20);
    test.ctx.algorithm_choice = AlgorithmChoice::deterministic;
    const ConvDesc d = ConvDesc::parse("conv:mb16_ic32oc64_ih16iw16_kh3kw3_sh1sw1_ph1pw1_g1");
    const std::string name = d.str() + " at " + precision_name(precision) + ", deterministic";
    const TensorDesc src_desc = act_desc(conv_src(d), precision);
    auto op = cuda::plan_conv(test.ctx, d, src_desc, TensorDesc::any(conv_dst(d)));
    const std::string& note = test.ctx.plan_notes.back();
    size_t chosen = 0;
    for (size_t at = note.find(",deterministic)"); at != std::string::npos; at = note.find(",deterministic)", at + 1))
      ++chosen;
    EXPECT_EQ(chosen, 3u) << "all three directions from the deterministic ones: " << note;
    const TensorDesc dst_desc = op->dst_desc();
    const size_t n_src = conv_src(d).numel(), n_dst = conv_dst(d).numel(), n_wei = d.weight_count();
    const Vec src = random_vec(n_src, 90), wei = random_vec(n_wei, 91), diff_dst = random_vec(n_dst, 92);
    DeviceTensor src_dev = upload(src, src_desc), wei_dev = upload_f32(wei), diff_dst_dev = upload(diff_dst, dst_desc);
    Vec first_src, first_wei;
    for (int repeat = 0; repeat < 2; ++repeat) {
      DeviceTensor diff_src_dev = upload(nan_vec(n_src), src_desc);
      DeviceTensor diff_wei_dev = upload_f32(nan_vec(n_wei)), diff_bia_dev = upload_f32(nan_vec(d.oc));
      op->backward(src_dev.tensor, diff_dst_dev.tensor, wei_dev.tensor.f32(), diff_src_dev.tensor,
                   diff_wei_dev.tensor.f32(), diff_bia_dev.tensor.f32());
      const Vec got_src = download(diff_src_dev.tensor), got_wei = download_f32(diff_wei_dev.data(), n_wei);
      if (repeat == 0) {
        first_src = got_src;
        first_wei = got_wei;
        Vec diff_src_ref(n_src), diff_wei_ref(n_wei), diff_bia_ref(d.oc);
        ref::conv_backward_data(d, diff_dst.data(), wei.data(), diff_src_ref.data());
        ref::conv_backward_weights(d, src.data(), diff_dst.data(), diff_wei_ref.data(), diff_bia_ref.data());
        expect_close(got_src, diff_src_ref, tolerance(precision), name + " backward_data");
        expect_close(got_wei, diff_wei_ref, tolerance(precision), name + " backward_weights");
      } else {
        EXPECT_EQ(std::memcmp(got_src.data(), first_src.data(), n_src * sizeof(float)), 0) << name << ": diff_src";
        EXPECT_EQ(std::memcmp(got_wei.data(), first_wei.data(), n_wei * sizeof(float)), 0) << name << ": diff_wei";
      }
    }
  }
}

TEST(CudaDeterministicPlanning, OverlappingMaxPoolBackwardRepeatsBitForBit) {
  SKIP_WITHOUT_DEVICE();
  TestContext test(Precision::fp32, 0);
  test.ctx.algorithm_choice = AlgorithmChoice::deterministic;
  const PoolDesc d = PoolDesc::parse("pool:max_mb8c16_ih15iw15_kh3kw3_sh2sw2_ph0pw0");  // windows overlap
  const Shape src_dims{d.mb, d.c, d.ih, d.iw}, dst_dims{d.mb, d.c, d.oh(), d.ow()};
  const size_t n_src = src_dims.numel(), n_dst = dst_dims.numel();
  const TensorDesc src_desc = act_desc(src_dims, Precision::fp32), dst_desc = act_desc(dst_dims, Precision::fp32);
  auto op = cuda::plan_pool(test.ctx, d, src_desc, TensorDesc::any(dst_dims));
  const Vec src = distinct_planes(n_src, d.ih * d.iw, 93), diff_dst = random_vec(n_dst, 94);
  DeviceTensor src_dev = upload(src, src_desc), dst_dev = upload(nan_vec(n_dst), dst_desc);
  op->forward(src_dev.tensor, dst_dev.tensor, nullptr);
  DeviceTensor diff_dst_dev = upload(diff_dst, dst_desc);
  Vec first;
  for (int repeat = 0; repeat < 2; ++repeat) {
    DeviceTensor diff_src_dev = upload(nan_vec(n_src), src_desc);
    op->backward(diff_dst_dev.tensor, nullptr, diff_src_dev.tensor);
    const Vec got = download(diff_src_dev.tensor);
    if (repeat == 0) {
      first = got;
      Vec diff_src_ref(n_src);
      std::vector<unsigned char> ws_ref(ref::pool_workspace_bytes(d) + 1);
      Vec dst_ref(n_dst);
      ref::pool_forward(d, src.data(), dst_ref.data(), ws_ref.data());
      ref::pool_backward(d, diff_dst.data(), ws_ref.data(), diff_src_ref.data());
      expect_close(got, diff_src_ref, tolerance(Precision::fp32), d.str() + " backward, deterministic");
    } else {
      EXPECT_EQ(std::memcmp(got.data(), first.data(), n_src * sizeof(float)), 0) << d.str();
    }
  }
}

// ---- planning errors (no device needed) -----------------------------------------------------

TEST(CudaDnnPlanningErrors, RejectBadDescsBeforeTouchingTheDevice) {
  cuda::CudaContext ctx;  // no device, stream or handles: every check below runs before them
  const ConvDesc conv = ConvDesc::parse("conv:mb2_ic4oc8_ih8iw8_kh3kw3_sh1sw1_ph1pw1_g1");
  const Shape conv_in = conv_src(conv);
  TensorDesc blocked = TensorDesc::plain(conv_in);
  blocked.layout = 7;  // another backend's layout id
  EXPECT_THROW(cuda::plan_conv(ctx, conv, blocked, TensorDesc::any(conv_dst(conv))), ConfigError);
  EXPECT_THROW(cuda::plan_conv(ctx, conv, TensorDesc::plain(conv_in, DType::i32), TensorDesc::any(conv_dst(conv))),
               ConfigError);
  EXPECT_THROW(cuda::plan_conv(ctx, conv, TensorDesc::plain(Shape{2, 4, 8, 9}), TensorDesc::any(conv_dst(conv))),
               ConfigError);
  EXPECT_THROW(cuda::plan_conv(ctx, conv, TensorDesc::plain(conv_in), TensorDesc::plain(Shape{2, 8, 8, 7})),
               ConfigError);
  ConvDesc bad_groups = conv;
  bad_groups.groups = 3;
  EXPECT_THROW(cuda::plan_conv(ctx, bad_groups, TensorDesc::plain(conv_in), TensorDesc::any(conv_dst(conv))),
               ConfigError);
  const PoolDesc pool = PoolDesc::parse("pool:max_mb2c3_ih8iw8_kh2kw2_sh2sw2_ph0pw0");
  EXPECT_THROW(cuda::plan_pool(ctx, pool, TensorDesc::plain(Shape{2, 3, 8, 7}), TensorDesc::any(Shape{2, 3, 4, 4})),
               ConfigError);
  const BnDesc bn = BnDesc::parse("bn:mb2c3_h4w4");
  EXPECT_THROW(cuda::plan_batchnorm(ctx, bn, TensorDesc::plain(Shape{2, 4, 4, 4}), TensorDesc::any(Shape{2, 4, 4, 4})),
               ConfigError);
  const EltwiseDesc relu = EltwiseDesc::parse("eltwise:relu_n100");
  EXPECT_THROW(cuda::plan_eltwise(ctx, relu, TensorDesc::plain(Shape{99}), TensorDesc::any(Shape{99})), ConfigError);
  EXPECT_THROW(cuda::plan_eltwise(ctx, relu, TensorDesc::plain(Shape{100}, DType::u8), TensorDesc::any(Shape{100})),
               ConfigError);
}

}  // namespace
}  // namespace ts
