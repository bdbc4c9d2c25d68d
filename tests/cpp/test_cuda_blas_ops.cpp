// The CUDA backend's fully connected op (cuBLASLt) and its own-kernel ops (add, concat, dropout,
// softmax cross-entropy, MSE) against the reference kernels, at every precision, plus finite-
// difference gradient checks in fp32. Host data goes in and out through copy_from_host /
// copy_to_host; outputs are pre-filled with NaN so an element an op forgets to write fails.
//
// Inputs of 16-bit runs are rounded to the activation type on the host first, so the reference
// sees exactly what the device computes on; what remains is the device's arithmetic. Tolerances
// (|got - want| <= rtol * (|want| + max |want|), the max over the tensor):
//   fp32 1e-5 (f32 math, different summation order);
//   tf32 2e-3 (operands rounded to 10 mantissa bits inside the matmul);
//   fp16 2e-3 (f32 accumulation, outputs rounded to 11 significant bits);
//   bf16 2e-2 (f32 accumulation, outputs rounded to 8 significant bits).
// Element-wise copies and single roundings (add, concat, dropout) must match bit for bit.
// Every case needs a CUDA device and skips with the reason where there is none.
#include <gtest/gtest.h>

#include <cuda_bf16.h>
#include <cuda_fp16.h>

#include <algorithm>
#include <cctype>
#include <cmath>
#include <cstdint>
#include <cstring>
#include <iostream>
#include <limits>
#include <memory>
#include <ostream>
#include <string>
#include <tuple>
#include <vector>

#include "backend/cuda/cuda_backend.h"
#include "backend/cuda/cuda_fc_kernels.h"
#include "backend/ref/ref_kernels.h"
#include "core/error.h"
#include "core/rng.h"

#include "cuda_test_support.h"

namespace ts {

// GoogleTest prints parameters through PrintTo: "fp16" rather than the enum's bytes, so the names
// CTest lists are readable and the same on every run.
static void PrintTo(Precision p, std::ostream* os) { *os << precision_name(p); }

namespace {

using Vec = std::vector<float>;

// ---- host data in any activation type ---------------------------------------------------------
float round_to(DType type, float v) {
  if (type == DType::f16) return __half2float(__float2half_rn(v));
  if (type == DType::bf16) return __bfloat162float(__float2bfloat16_rn(v));
  return v;
}
Vec rounded(Vec v, DType type) {
  for (float& x : v) x = round_to(type, x);
  return v;
}

std::vector<unsigned char> encode(const Vec& values, DType type) {
  std::vector<unsigned char> bytes(values.size() * dtype_bytes(type));
  for (size_t i = 0; i < values.size(); ++i) {
    if (type == DType::f16) {
      const __half h = __float2half_rn(values[i]);
      std::memcpy(&bytes[i * 2], &h, 2);
    } else if (type == DType::bf16) {
      const __nv_bfloat16 h = __float2bfloat16_rn(values[i]);
      std::memcpy(&bytes[i * 2], &h, 2);
    } else {
      std::memcpy(&bytes[i * 4], &values[i], 4);
    }
  }
  return bytes;
}

Vec decode(const std::vector<unsigned char>& bytes, DType type) {
  Vec values(bytes.size() / dtype_bytes(type));
  for (size_t i = 0; i < values.size(); ++i) {
    if (type == DType::f16) {
      __half h;
      std::memcpy(&h, &bytes[i * 2], 2);
      values[i] = __half2float(h);
    } else if (type == DType::bf16) {
      __nv_bfloat16 h;
      std::memcpy(&h, &bytes[i * 2], 2);
      values[i] = __bfloat162float(h);
    } else {
      std::memcpy(&values[i], &bytes[i * 4], 4);
    }
  }
  return values;
}

Vec random_vec(size_t n, uint64_t seed, float lo = -1.0f, float hi = 1.0f) {
  Rng rng(seed);
  Vec v(n);
  for (auto& x : v) x = lo + (hi - lo) * static_cast<float>(rng.uniform());
  return v;
}
Vec nan_vec(size_t n) { return Vec(n, std::numeric_limits<float>::quiet_NaN()); }

// A tensor in device memory with its desc.
struct DeviceTensor {
  DeviceBuffer buffer;
  TensorDesc desc;
  Tensor tensor() const { return Tensor(buffer.data(), desc); }
  void* data() const { return buffer.data(); }
};

DeviceTensor upload(Backend& b, const Vec& values, const TensorDesc& desc) {
  const std::vector<unsigned char> bytes = encode(values, desc.dtype);
  DeviceTensor t{b.allocate(bytes.size()), desc};
  b.copy_from_host(t.data(), bytes.data(), bytes.size());
  return t;
}
Vec download(Backend& b, const void* data, DType type, size_t n) {
  std::vector<unsigned char> bytes(n * dtype_bytes(type));
  b.copy_to_host(bytes.data(), data, bytes.size());
  return decode(bytes, type);
}
Vec download(Backend& b, const DeviceTensor& t) { return download(b, t.data(), t.desc.dtype, size_t(t.desc.numel())); }

// f32 parameters at `offset` floats into their own allocation: offset 1 puts them off every
// 16-byte boundary, as a slice of the parameter arena may be.
struct DeviceParams {
  DeviceBuffer buffer;
  size_t offset = 0;
  float* get() const { return buffer.f32() + offset; }
};
DeviceParams upload_params(Backend& b, const Vec& values, size_t offset) {
  DeviceParams p{b.allocate((values.size() + offset) * sizeof(float)), offset};
  b.copy_from_host(p.get(), values.data(), values.size() * sizeof(float));
  return p;
}

// ---- comparisons ------------------------------------------------------------------------------
double tolerance_of(Precision p) {
  switch (p) {
    case Precision::fp32: return 1e-5;
    case Precision::tf32: return 2e-3;
    case Precision::fp16: return 2e-3;
    case Precision::bf16: return 2e-2;
  }
  return 0.0;
}
DType act_dtype_of(Precision p) {
  return p == Precision::fp16 ? DType::f16 : p == Precision::bf16 ? DType::bf16 : DType::f32;
}

void expect_close(const Vec& got, const Vec& want, const std::string& what, double rtol) {
  ASSERT_EQ(got.size(), want.size()) << what;
  double scale = 0.0;
  for (float w : want) scale = std::max(scale, double(std::fabs(w)));
  size_t bad = 0;
  for (size_t i = 0; i < got.size(); ++i) {
    const double tol = rtol * (std::fabs(want[i]) + scale) + 1e-30;
    if (!(std::fabs(double(got[i]) - double(want[i])) <= tol) && ++bad <= 5)
      ADD_FAILURE() << what << ": element " << i << " cuda " << got[i] << " ref " << want[i] << " (tol " << tol << ")";
  }
  EXPECT_EQ(bad, 0u) << what << ": " << bad << " of " << got.size() << " elements differ";
}

void expect_identical(const Vec& got, const Vec& want, const std::string& what) {
  ASSERT_EQ(got.size(), want.size()) << what;
  size_t bad = 0;
  for (size_t i = 0; i < got.size(); ++i)
    if (!(got[i] == want[i]) && ++bad <= 5)
      ADD_FAILURE() << what << ": element " << i << " cuda " << got[i] << " want " << want[i];
  EXPECT_EQ(bad, 0u) << what << ": " << bad << " of " << got.size() << " elements differ";
}

// ---- fixtures ---------------------------------------------------------------------------------
class CudaOps {
 protected:
  // Skips (returns false) without a device or without `p` on it; else makes the backend.
  bool start(Precision p) {
    if (CudaBackend::device_count() == 0) {
      skip_reason_ = testing_support::cuda_skip_reason();
      return false;
    }
    backend_ = std::make_unique<CudaBackend>(0);
    if (!backend_->supports(Op::fc, p)) {
      skip_reason_ = std::string("precision ") + precision_name(p) + " is not supported on " + backend_->describe().name;
      return false;
    }
    backend_->set_precision(p);
    return true;
  }
  CudaBackend& be() { return *backend_; }
  std::unique_ptr<CudaBackend> backend_;
  std::string skip_reason_;
};

const Precision kPrecisions[] = {Precision::fp32, Precision::tf32, Precision::fp16, Precision::bf16};

class CudaOpsAtPrecision : public CudaOps, public ::testing::TestWithParam<Precision> {
 protected:
  void SetUp() override {
    if (!start(GetParam())) GTEST_SKIP() << skip_reason_;
  }
  Precision precision() const { return GetParam(); }
  DType act() const { return act_dtype_of(GetParam()); }
  double rtol() const { return tolerance_of(GetParam()); }
  // The input data types a layer of this run may hand an op: the activation type, and f32 (the
  // input image of a 16-bit run).
  std::vector<DType> input_types() const {
    return act() == DType::f32 ? std::vector<DType>{DType::f32} : std::vector<DType>{act(), DType::f32};
  }
};

std::string precision_param_name(const ::testing::TestParamInfo<Precision>& info) { return precision_name(info.param); }

class CudaOpsFp32 : public CudaOps, public ::testing::Test {
 protected:
  void SetUp() override {
    if (!start(Precision::fp32)) GTEST_SKIP() << skip_reason_;
  }
};

// ---- fully connected --------------------------------------------------------------------------
struct FcCase {
  const char* desc;
  int64_t c = 0, h = 0, w = 0;  // a 4-D src (mb, c, h, w) with c*h*w = ic; 0: src (mb, ic)
};

void PrintTo(const FcCase& c, std::ostream* os) {
  *os << c.desc;
  if (c.c) *os << " src (mb," << c.c << "," << c.h << "," << c.w << ")";
}

class CudaFc : public CudaOps, public ::testing::TestWithParam<std::tuple<Precision, FcCase>> {
 protected:
  void SetUp() override {
    if (!start(std::get<0>(GetParam()))) GTEST_SKIP() << skip_reason_;
  }
};

// Forward, backward data and backward weights against ref, for src in the activation type and in
// f32, with the f32 weights and gradients once 16-byte aligned and once not (arena slices).
TEST_P(CudaFc, ForwardBackwardAgainstRef) {
  const auto [precision, fc_case] = GetParam();
  const FcDesc d = FcDesc::parse(fc_case.desc);
  const DType act = act_dtype_of(precision);
  const double rtol = tolerance_of(precision);
  const Shape src_dims = fc_case.c ? Shape{d.mb, fc_case.c, fc_case.h, fc_case.w} : Shape{d.mb, d.ic};
  ASSERT_EQ(src_dims.numel(), d.mb * d.ic) << "test case " << fc_case.desc;
  const size_t n_src = d.mb * d.ic, n_dst = d.mb * d.oc, n_wei = d.oc * d.ic;
  // Values exactly representable in the activation type: the op's conversions are then exact.
  const Vec wei = rounded(random_vec(n_wei, 2), act), bia = rounded(random_vec(d.oc, 3), act);
  const float* bia_host = d.bias ? bia.data() : nullptr;
  std::vector<DType> src_types{act};
  if (act != DType::f32) src_types.push_back(DType::f32);
  for (DType src_type : src_types)
    for (size_t offset : {size_t{0}, size_t{1}}) {
      const std::string name = std::string(fc_case.desc) + " " + precision_name(precision) + " src " +
                               dtype_name(src_type) + (offset ? " unaligned params" : " aligned params");
      SCOPED_TRACE(name);
      const TensorDesc src_desc = TensorDesc::plain(src_dims, src_type);
      auto op = be().plan_fc(d, src_desc, TensorDesc::any(Shape{d.mb, d.oc}));
      const TensorDesc dst_desc = op->dst_desc();
      EXPECT_TRUE(dst_desc.is_plain()) << dst_desc.str();
      EXPECT_EQ(dst_desc.dtype, act) << "an output requested as any takes the activation type";
      const Vec src = rounded(random_vec(n_src, 10 + offset), act);
      const Vec diff_dst = rounded(random_vec(n_dst, 20 + offset), act);
      DeviceTensor src_d = upload(be(), src, src_desc), dst_d = upload(be(), nan_vec(n_dst), dst_desc);
      DeviceParams wei_d = upload_params(be(), wei, offset), bia_d = upload_params(be(), bia, offset);
      op->forward(src_d.tensor(), wei_d.get(), d.bias ? bia_d.get() : nullptr, dst_d.tensor());
      Vec dst_ref(n_dst);
      ref::fc_forward(d, src.data(), wei.data(), bia_host, dst_ref.data());
      expect_close(download(be(), dst_d), dst_ref, name + " forward", rtol);

      DeviceTensor diff_dst_d = upload(be(), diff_dst, dst_desc), diff_src_d = upload(be(), nan_vec(n_src), src_desc);
      DeviceParams diff_wei_d = upload_params(be(), nan_vec(n_wei), offset);
      DeviceParams diff_bia_d = upload_params(be(), nan_vec(d.oc), offset);
      op->backward(src_d.tensor(), diff_dst_d.tensor(), wei_d.get(), diff_src_d.tensor(), diff_wei_d.get(),
                   d.bias ? diff_bia_d.get() : nullptr);
      Vec diff_src_ref(n_src), diff_wei_ref(n_wei), diff_bia_ref(d.oc);
      ref::fc_backward_data(d, diff_dst.data(), wei.data(), diff_src_ref.data());
      ref::fc_backward_weights(d, src.data(), diff_dst.data(), diff_wei_ref.data(),
                               d.bias ? diff_bia_ref.data() : nullptr);
      expect_close(download(be(), diff_src_d), diff_src_ref, name + " diff_src", rtol);
      expect_close(download(be(), diff_wei_d.get(), DType::f32, n_wei), diff_wei_ref, name + " diff_wei", rtol);
      if (d.bias)
        expect_close(download(be(), diff_bia_d.get(), DType::f32, d.oc), diff_bia_ref, name + " diff_bia", rtol);
    }
}

// The backward without diff_src (a first layer) writes the parameter gradients only.
TEST_P(CudaFc, BackwardWithoutDiffSrc) {
  const auto [precision, fc_case] = GetParam();
  const FcDesc d = FcDesc::parse(fc_case.desc);
  const DType act = act_dtype_of(precision);
  const size_t n_src = d.mb * d.ic, n_dst = d.mb * d.oc, n_wei = d.oc * d.ic;
  const Vec src = rounded(random_vec(n_src, 4), act), wei = rounded(random_vec(n_wei, 5), act);
  const Vec bia = rounded(random_vec(d.oc, 6), act), diff_dst = rounded(random_vec(n_dst, 7), act);
  auto op = be().plan_fc(d, TensorDesc::plain(Shape{d.mb, d.ic}, act), TensorDesc::any(Shape{d.mb, d.oc}));
  DeviceTensor src_d = upload(be(), src, TensorDesc::plain(Shape{d.mb, d.ic}, act));
  DeviceTensor dst_d = upload(be(), nan_vec(n_dst), op->dst_desc()), diff_dst_d = upload(be(), diff_dst, op->dst_desc());
  DeviceParams wei_d = upload_params(be(), wei, 0), bia_d = upload_params(be(), bia, 0);
  DeviceParams diff_wei_d = upload_params(be(), nan_vec(n_wei), 0), diff_bia_d = upload_params(be(), nan_vec(d.oc), 0);
  op->forward(src_d.tensor(), wei_d.get(), d.bias ? bia_d.get() : nullptr, dst_d.tensor());
  op->backward(src_d.tensor(), diff_dst_d.tensor(), wei_d.get(), Tensor(), diff_wei_d.get(),
               d.bias ? diff_bia_d.get() : nullptr);
  Vec diff_wei_ref(n_wei), diff_bia_ref(d.oc);
  ref::fc_backward_weights(d, src.data(), diff_dst.data(), diff_wei_ref.data(), d.bias ? diff_bia_ref.data() : nullptr);
  expect_close(download(be(), diff_wei_d.get(), DType::f32, n_wei), diff_wei_ref, "diff_wei", tolerance_of(precision));
  if (d.bias)
    expect_close(download(be(), diff_bia_d.get(), DType::f32, d.oc), diff_bia_ref, "diff_bia", tolerance_of(precision));
}

const FcCase kFcCases[] = {
    {"fc:mb1_ic13oc5"},                 // batch 1
    {"fc:mb7_ic13oc5"},                 // odd sizes
    {"fc:mb7_ic13oc5_nobias"},          // no bias: no epilogue
    {"fc:mb8_ic60oc13", 3, 5, 4},       // 4-D src (mb, c, h, w)
    {"fc:mb64_ic3136oc17", 64, 7, 7},   // LeNet-like: conv output into fc
    {"fc:mb32_ic512oc1000"},            // tensor-core sized
};

std::string fc_param_name(const ::testing::TestParamInfo<std::tuple<Precision, FcCase>>& info) {
  std::string name = std::string(precision_name(std::get<0>(info.param))) + "_" + std::get<1>(info.param).desc;
  for (char& c : name)
    if (!std::isalnum(static_cast<unsigned char>(c))) c = '_';
  return name;
}

INSTANTIATE_TEST_SUITE_P(Shapes, CudaFc,
                         ::testing::Combine(::testing::ValuesIn(kPrecisions), ::testing::ValuesIn(kFcCases)),
                         fc_param_name);

// One line per planned fc in the plan notes (shapes, types, algorithm), workspace within the limit.
TEST_P(CudaOpsAtPrecision, FcRecordsItsPlan) {
  const FcDesc d = FcDesc::parse("fc:mb16_ic256oc64");
  const size_t before = be().plan_notes().size();
  auto op = be().plan_fc(d, TensorDesc::plain(Shape{d.mb, d.ic}, act()), TensorDesc::any(Shape{d.mb, d.oc}));
  const std::vector<std::string> notes = be().plan_notes();
  ASSERT_EQ(notes.size(), before + 1);
  const std::string& note = notes.back();
  std::cout << "plan note: " << note << "\n";  // which epilogues / fallbacks this device took
  RecordProperty("plan_note", note);
  EXPECT_NE(note.find(d.str()), std::string::npos) << note;
  EXPECT_NE(note.find(precision_name(precision())), std::string::npos) << note;
  EXPECT_NE(note.find("algo "), std::string::npos) << note;
  EXPECT_NE(note.find("workspace "), std::string::npos) << note;
  EXPECT_LE(be().workspace_bytes(), size_t{512} << 20);
}

TEST_F(CudaOpsFp32, FcRejectsAnInputThatIsNotMbByIc) {
  const FcDesc d = FcDesc::parse("fc:mb4_ic10oc3");
  EXPECT_THROW(be().plan_fc(d, TensorDesc::plain(Shape{4, 11}), TensorDesc::any(Shape{4, 3})), ConfigError);
  EXPECT_THROW(be().plan_fc(d, TensorDesc::plain(Shape{2, 20}), TensorDesc::any(Shape{4, 3})), ConfigError);
  EXPECT_THROW(be().plan_fc(d, TensorDesc::plain(Shape{4, 10}, DType::i32), TensorDesc::any(Shape{4, 3})), ConfigError);
}

// Sum of dst * weights_of_dst in double: a scalar whose gradient w.r.t. dst is weights_of_dst.
double weighted_sum(const Vec& dst, const Vec& weights_of_dst) {
  double s = 0.0;
  for (size_t i = 0; i < dst.size(); ++i) s += double(dst[i]) * weights_of_dst[i];
  return s;
}

// Finite differences of L = sum(fc(src) * r) against the op's backward, for a sample of src,
// weight and bias elements. L is linear in each single value, so central differences are exact up
// to the f32 rounding of the forward.
TEST_F(CudaOpsFp32, FcGradientMatchesFiniteDifferences) {
  const FcDesc d = FcDesc::parse("fc:mb3_ic7oc5");
  const size_t n_src = d.mb * d.ic, n_dst = d.mb * d.oc, n_wei = d.oc * d.ic;
  Vec src = random_vec(n_src, 31), wei = random_vec(n_wei, 32), bia = random_vec(d.oc, 33);
  const Vec r = random_vec(n_dst, 34);  // dL/ddst
  const TensorDesc src_desc = TensorDesc::plain(Shape{d.mb, d.ic});
  auto op = be().plan_fc(d, src_desc, TensorDesc::any(Shape{d.mb, d.oc}));
  DeviceTensor dst_d = upload(be(), nan_vec(n_dst), op->dst_desc());
  auto loss = [&]() {
    DeviceTensor src_d = upload(be(), src, src_desc);
    DeviceParams wei_d = upload_params(be(), wei, 0), bia_d = upload_params(be(), bia, 0);
    op->forward(src_d.tensor(), wei_d.get(), bia_d.get(), dst_d.tensor());
    return weighted_sum(download(be(), dst_d), r);
  };
  // Analytic gradients.
  DeviceTensor src_d = upload(be(), src, src_desc), r_d = upload(be(), r, op->dst_desc());
  DeviceParams wei_d = upload_params(be(), wei, 0), bia_d = upload_params(be(), bia, 0);
  DeviceTensor diff_src_d = upload(be(), nan_vec(n_src), src_desc);
  DeviceParams diff_wei_d = upload_params(be(), nan_vec(n_wei), 0), diff_bia_d = upload_params(be(), nan_vec(d.oc), 0);
  op->forward(src_d.tensor(), wei_d.get(), bia_d.get(), dst_d.tensor());
  op->backward(src_d.tensor(), r_d.tensor(), wei_d.get(), diff_src_d.tensor(), diff_wei_d.get(), diff_bia_d.get());
  const Vec diff_src = download(be(), diff_src_d), diff_wei = download(be(), diff_wei_d.get(), DType::f32, n_wei);
  const Vec diff_bia = download(be(), diff_bia_d.get(), DType::f32, d.oc);

  const float eps = 0.25f;  // exact in binary; L is linear in each value
  auto check = [&](Vec& values, const Vec& analytic, const char* what) {
    for (size_t i = 0; i < values.size(); i += 2) {
      const float saved = values[i];
      values[i] = saved + eps;
      const double up = loss();
      values[i] = saved - eps;
      const double down = loss();
      values[i] = saved;
      const double numeric = (up - down) / (2.0 * eps);
      EXPECT_NEAR(analytic[i], numeric, 1e-4 + 1e-4 * std::fabs(numeric)) << what << " element " << i;
    }
  };
  check(src, diff_src, "diff_src");
  check(wei, diff_wei, "diff_wei");
  check(bia, diff_bia, "diff_bia");
}

// The fc's own bias kernels (used where cuBLASLt's epilogues are unavailable) against the host.
TEST_P(CudaOpsAtPrecision, FcBiasKernels) {
  const int64_t rows = 37, cols = 45;
  const Vec dst = rounded(random_vec(rows * cols, 40), act()), bias = rounded(random_vec(cols, 41), act());
  const TensorDesc desc = TensorDesc::plain(Shape{rows, cols}, act());
  DeviceTensor dst_d = upload(be(), dst, desc);
  DeviceParams bias_d = upload_params(be(), bias, 1), diff_bias_d = upload_params(be(), nan_vec(cols), 1);
  cuda::add_bias_rows(dst_d.data(), act(), bias_d.get(), rows, cols, be().stream());
  cuda::bias_gradient(dst_d.data(), act(), rows, cols, diff_bias_d.get(), be().stream());
  Vec with_bias(dst.size());
  for (int64_t i = 0; i < rows * cols; ++i) with_bias[i] = round_to(act(), dst[i] + bias[i % cols]);
  const Vec got = download(be(), dst_d);
  expect_identical(got, with_bias, "add_bias_rows (one f32 add, one rounding)");
  Vec column_sums(cols, 0.0f);
  for (int64_t c = 0; c < cols; ++c) {
    double s = 0.0;
    for (int64_t r = 0; r < rows; ++r) s += got[r * cols + c];
    column_sums[c] = static_cast<float>(s);
  }
  expect_close(download(be(), diff_bias_d.get(), DType::f32, cols), column_sums, "bias_gradient", 1e-5);
}

// ---- add ----------------------------------------------------------------------------------------
// a + b and max(a + b, 0) for inputs in the run's types (also mixed), dst in a's desc; also in
// place (dst = a), as the Add layer accumulates.
TEST_P(CudaOpsAtPrecision, AddAndAddReluAgainstRef) {
  const Shape dims{3, 7, 13, 5};
  const size_t n = dims.numel();
  for (DType a_type : input_types())
    for (DType b_type : input_types())
      for (bool relu : {false, true}) {
        const std::string name =
            std::string(relu ? "add_relu " : "add ") + dtype_name(a_type) + " + " + dtype_name(b_type);
        SCOPED_TRACE(name);
        const TensorDesc a_desc = TensorDesc::plain(dims, a_type), b_desc = TensorDesc::plain(dims, b_type);
        auto op = be().plan_add(a_desc, b_desc, relu);
        EXPECT_EQ(op->dst_desc(), a_desc);
        const Vec a = rounded(random_vec(n, 50), a_type), b = rounded(random_vec(n, 51), b_type);
        Vec want(n);
        (relu ? ref::add_relu : ref::add)(int64_t(n), a.data(), b.data(), want.data());
        want = rounded(want, a_type);
        DeviceTensor a_d = upload(be(), a, a_desc), b_d = upload(be(), b, b_desc);
        DeviceTensor dst_d = upload(be(), nan_vec(n), a_desc);
        op->forward(a_d.tensor(), b_d.tensor(), dst_d.tensor());
        expect_identical(download(be(), dst_d), want, name);
        op->forward(a_d.tensor(), b_d.tensor(), a_d.tensor());  // in place
        expect_identical(download(be(), a_d), want, name + " in place");
      }
}

TEST_F(CudaOpsFp32, AddRefusesDifferentShapes) {
  EXPECT_THROW(be().plan_add(TensorDesc::plain(Shape{2, 3}), TensorDesc::plain(Shape{3, 2}), false), ConfigError);
  EXPECT_THROW(be().plan_add(TensorDesc::plain(Shape{2, 3}), TensorDesc::plain(Shape{2, 3}, DType::i32), false),
               ConfigError);
}

// ---- concat -----------------------------------------------------------------------------------
// Three inputs (mb 2, channels 3, 1, 5, 4x3) into one; backward splits, skipping input 1 (null).
TEST_P(CudaOpsAtPrecision, ConcatForwardBackwardSkipsNullInputs) {
  const int64_t mb = 2, hw = 12;
  const std::vector<int64_t> channels{3, 1, 5};
  const int64_t total = 9;
  for (DType src_type : input_types()) {
    SCOPED_TRACE(std::string("inputs ") + dtype_name(src_type));
    std::vector<TensorDesc> descs;
    std::vector<Vec> srcs;
    for (size_t i = 0; i < channels.size(); ++i) {
      descs.push_back(TensorDesc::plain(Shape{mb, channels[i], 4, 3}, src_type));
      srcs.push_back(rounded(random_vec(mb * channels[i] * hw, 60 + i), src_type));
    }
    auto op = be().plan_concat(descs, TensorDesc::any(Shape{mb, total, 4, 3}));
    EXPECT_EQ(op->dst_desc(), TensorDesc::plain(Shape{mb, total, 4, 3}, act()));
    std::vector<DeviceTensor> srcs_d;
    std::vector<Tensor> src_tensors;
    for (size_t i = 0; i < channels.size(); ++i) {
      srcs_d.push_back(upload(be(), srcs[i], descs[i]));
      src_tensors.push_back(srcs_d.back().tensor());
    }
    DeviceTensor dst_d = upload(be(), nan_vec(mb * total * hw), op->dst_desc());
    op->forward(src_tensors, dst_d.tensor());
    Vec want(mb * total * hw);
    ref::concat_forward(mb, hw, channels, {srcs[0].data(), srcs[1].data(), srcs[2].data()}, want.data());
    expect_identical(download(be(), dst_d), rounded(want, act()), "concat forward");

    const Vec diff_dst = rounded(random_vec(mb * total * hw, 70), act());
    DeviceTensor diff_dst_d = upload(be(), diff_dst, op->dst_desc());
    const float sentinel = 7.0f;  // input 1's gradient buffer must keep it
    std::vector<DeviceTensor> diffs_d;
    for (size_t i = 0; i < channels.size(); ++i)
      diffs_d.push_back(upload(be(), Vec(mb * channels[i] * hw, sentinel), descs[i]));
    op->backward(diff_dst_d.tensor(), {diffs_d[0].tensor(), Tensor(), diffs_d[2].tensor()});
    std::vector<Vec> want_diffs;
    for (int64_t c : channels) want_diffs.emplace_back(mb * c * hw);
    ref::concat_backward(mb, hw, channels, diff_dst.data(), {want_diffs[0].data(), nullptr, want_diffs[2].data()});
    expect_identical(download(be(), diffs_d[0]), rounded(want_diffs[0], src_type), "diff_src 0");
    expect_identical(download(be(), diffs_d[1]), Vec(mb * channels[1] * hw, sentinel), "diff_src 1 (skipped)");
    expect_identical(download(be(), diffs_d[2]), rounded(want_diffs[2], src_type), "diff_src 2");
  }
}

// ---- dropout ----------------------------------------------------------------------------------
TEST_P(CudaOpsAtPrecision, DropoutAppliesMaskAndScale) {
  const Shape dims{4, 7, 13, 5};
  const size_t n = dims.numel();
  const float scale = 1.0f / (1.0f - 0.3f);
  std::vector<uint8_t> mask(n);
  Rng rng(80);
  for (auto& m : mask) m = rng.uniform() >= 0.3 ? 1 : 0;
  DeviceBuffer mask_d = be().allocate(n);
  be().copy_from_host(mask_d.data(), mask.data(), n);
  const auto* mask_ptr = static_cast<const uint8_t*>(mask_d.data());
  for (DType src_type : input_types()) {
    SCOPED_TRACE(std::string("src ") + dtype_name(src_type));
    const TensorDesc src_desc = TensorDesc::plain(dims, src_type);
    auto op = be().plan_dropout(src_desc);
    EXPECT_EQ(op->dst_desc(), TensorDesc::plain(dims, act()));
    const Vec src = rounded(random_vec(n, 81), src_type), diff_dst = rounded(random_vec(n, 82), act());
    DeviceTensor src_d = upload(be(), src, src_desc), dst_d = upload(be(), nan_vec(n), op->dst_desc());
    op->forward(mask_ptr, scale, src_d.tensor(), dst_d.tensor());
    Vec want(n);
    ref::dropout_apply(int64_t(n), mask.data(), scale, src.data(), want.data());
    expect_identical(download(be(), dst_d), rounded(want, act()), "dropout forward");
    DeviceTensor diff_dst_d = upload(be(), diff_dst, op->dst_desc()), diff_src_d = upload(be(), nan_vec(n), src_desc);
    op->backward(mask_ptr, scale, diff_dst_d.tensor(), diff_src_d.tensor());
    ref::dropout_apply(int64_t(n), mask.data(), scale, diff_dst.data(), want.data());
    expect_identical(download(be(), diff_src_d), rounded(want, src_type), "dropout backward");
  }
}

// ---- softmax cross-entropy --------------------------------------------------------------------
struct XentResult {
  Vec probs;
  float loss;
  Vec diff_logits;
};

// Forward (probs, loss on the device) and backward with loss_scale, through device memory.
XentResult run_softmax_xent(CudaBackend& be, const Vec& logits, const TensorDesc& desc,
                            const std::vector<int32_t>& labels, float loss_scale) {
  const int64_t mb = desc.dims[0], classes = desc.numel() / mb;
  auto op = be.plan_softmax_xent(desc);
  DeviceTensor logits_d = upload(be, logits, desc), diff_d = upload(be, nan_vec(logits.size()), desc);
  DeviceBuffer labels_d = be.allocate(labels.size() * sizeof(int32_t));
  be.copy_from_host(labels_d.data(), labels.data(), labels.size() * sizeof(int32_t));
  DeviceTensor probs_d = upload(be, nan_vec(mb * classes), TensorDesc::plain(Shape{mb, classes}));
  DeviceTensor loss_d = upload(be, nan_vec(1), TensorDesc::plain(Shape{1}));
  const auto* labels_ptr = static_cast<const int32_t*>(labels_d.data());
  op->forward(logits_d.tensor(), labels_ptr, probs_d.buffer.f32(), loss_d.buffer.f32());
  op->backward(probs_d.buffer.f32(), labels_ptr, loss_scale, diff_d.tensor());
  return {download(be, probs_d), download(be, loss_d)[0], download(be, diff_d)};
}

std::vector<int32_t> random_labels(int64_t mb, int64_t classes, uint64_t seed) {
  Rng rng(seed);
  std::vector<int32_t> labels(mb);
  for (auto& l : labels) l = static_cast<int32_t>(rng.below(classes));
  return labels;
}

// Probabilities and loss in f32 math whatever the logits' type (1e-5), the gradient in the logits'
// type (the precision's tolerance), with loss scale 1 and 1024; batch 1, odd, and 50000 classes.
TEST_P(CudaOpsAtPrecision, SoftmaxXentAgainstRef) {
  const std::vector<std::pair<int64_t, int64_t>> shapes{{1, 10}, {7, 13}, {64, 1000}, {3, 50000}};
  for (auto [mb, classes] : shapes)
    for (float loss_scale : {1.0f, 1024.0f}) {
      const std::string name = "mb " + std::to_string(mb) + " classes " + std::to_string(classes) + " loss_scale " +
                               std::to_string(loss_scale);
      SCOPED_TRACE(name);
      const TensorDesc desc = TensorDesc::plain(Shape{mb, classes}, act());
      const Vec logits = rounded(random_vec(mb * classes, 90 + mb, -8.0f, 8.0f), act());
      const std::vector<int32_t> labels = random_labels(mb, classes, 91);
      const XentResult got = run_softmax_xent(be(), logits, desc, labels, loss_scale);
      Vec probs_ref(mb * classes), diff_ref(mb * classes);
      const float loss_ref = ref::softmax_xent_forward(mb, classes, logits.data(), labels.data(), probs_ref.data());
      ref::softmax_xent_backward(mb, classes, probs_ref.data(), labels.data(), diff_ref.data());
      for (float& v : diff_ref) v *= loss_scale;
      expect_close(got.probs, probs_ref, name + " probs", 1e-5);
      EXPECT_NEAR(got.loss, loss_ref, 1e-5 * std::fabs(loss_ref)) << name;
      expect_close(got.diff_logits, diff_ref, name + " diff_logits", std::max(rtol(), 1e-5));
    }
}

// Logits around 1000 overflow a naive exp; the max-subtracted form stays exact. Loss reductions
// are in a fixed order: two runs agree bit for bit.
TEST_F(CudaOpsFp32, SoftmaxXentIsStableAndReproducible) {
  const int64_t mb = 33, classes = 517;
  Vec logits = random_vec(mb * classes, 95, -5.0f, 5.0f);
  for (float& v : logits) v += 1000.0f;
  const std::vector<int32_t> labels = random_labels(mb, classes, 96);
  const TensorDesc desc = TensorDesc::plain(Shape{mb, classes});
  const XentResult first = run_softmax_xent(be(), logits, desc, labels, 1.0f);
  const XentResult second = run_softmax_xent(be(), logits, desc, labels, 1.0f);
  Vec probs_ref(mb * classes);
  const float loss_ref = ref::softmax_xent_forward(mb, classes, logits.data(), labels.data(), probs_ref.data());
  ASSERT_TRUE(std::isfinite(first.loss));
  EXPECT_NEAR(first.loss, loss_ref, 1e-5 * std::fabs(loss_ref));
  expect_close(first.probs, probs_ref, "probs", 1e-5);
  EXPECT_EQ(first.loss, second.loss) << "the loss must be reproducible bit for bit";
  expect_identical(second.probs, first.probs, "probs of a second run");
}

// Finite differences of the mean loss against diff_logits (loss scale 1), in fp32.
TEST_F(CudaOpsFp32, SoftmaxXentGradientMatchesFiniteDifferences) {
  const int64_t mb = 4, classes = 9;
  Vec logits = random_vec(mb * classes, 97, -2.0f, 2.0f);
  const std::vector<int32_t> labels = random_labels(mb, classes, 98);
  const TensorDesc desc = TensorDesc::plain(Shape{mb, classes});
  const Vec analytic = run_softmax_xent(be(), logits, desc, labels, 1.0f).diff_logits;
  const float eps = 1e-2f;
  for (size_t i = 0; i < logits.size(); ++i) {
    const float saved = logits[i];
    logits[i] = saved + eps;
    const double up = run_softmax_xent(be(), logits, desc, labels, 1.0f).loss;
    logits[i] = saved - eps;
    const double down = run_softmax_xent(be(), logits, desc, labels, 1.0f).loss;
    logits[i] = saved;
    const double numeric = (up - down) / (2.0 * eps);
    EXPECT_NEAR(analytic[i], numeric, 2e-4 + 1e-2 * std::fabs(numeric)) << "logit " << i;
  }
}

// ---- mean-squared error -----------------------------------------------------------------------
TEST_P(CudaOpsAtPrecision, MseAgainstRef) {
  // A million values need a loss scale in fp16: 2 (pred - target) / n alone is below f16's
  // smallest normal number (that is what loss scaling is for).
  const std::vector<std::pair<int64_t, float>> cases{{1, 1.0f}, {1, 128.0f}, {7 * 13 * 5, 1.0f},
                                                     {7 * 13 * 5, 128.0f}, {1000003, 1024.0f}};
  for (auto [n, loss_scale] : cases) {
    const std::string name = "n " + std::to_string(n) + " loss_scale " + std::to_string(loss_scale);
    SCOPED_TRACE(name);
    const TensorDesc desc = TensorDesc::plain(Shape{n}, act());
    auto op = be().plan_mse(desc);
    const Vec pred = rounded(random_vec(n, 100), act()), target = random_vec(n, 101);
    DeviceTensor pred_d = upload(be(), pred, desc), diff_d = upload(be(), nan_vec(n), desc);
    DeviceTensor target_d = upload(be(), target, TensorDesc::plain(Shape{n}));
    DeviceTensor loss_d = upload(be(), nan_vec(1), TensorDesc::plain(Shape{1}));
    op->forward(pred_d.tensor(), target_d.buffer.f32(), loss_d.buffer.f32());
    const float loss = download(be(), loss_d)[0];
    op->forward(pred_d.tensor(), target_d.buffer.f32(), loss_d.buffer.f32());
    EXPECT_EQ(download(be(), loss_d)[0], loss) << "the loss must be reproducible bit for bit";
    op->backward(pred_d.tensor(), target_d.buffer.f32(), loss_scale, diff_d.tensor());
    const float loss_ref = ref::mse_forward(n, pred.data(), target.data());
    EXPECT_NEAR(loss, loss_ref, 1e-5 * std::fabs(loss_ref)) << name;
    Vec diff_ref(n);
    ref::mse_backward(n, pred.data(), target.data(), diff_ref.data());
    for (float& v : diff_ref) v *= loss_scale;
    expect_close(download(be(), diff_d), diff_ref, name + " diff_pred", std::max(rtol(), 1e-5));
  }
}

// loss_reads: log keeps the loss scale on the device (LossGradScale::device_factor): the loss
// gradients must be those of the same scale given by the host, bit for bit, with a share weight
// as factor too (the host multiplies the two first).
TEST_P(CudaOpsAtPrecision, LossGradientsTakeTheScaleFromTheDeviceAlike) {
  const float scale = 1024.0f, weight = 0.75f;
  DeviceBuffer scale_d = be().allocate(sizeof(float));
  be().copy_from_host(scale_d.data(), &scale, sizeof(float));
  const float* on_device = scale_d.f32();
  const int64_t mb = 7, classes = 13;
  const TensorDesc logits_desc = TensorDesc::plain(Shape{mb, classes}, act());
  const Vec logits = rounded(random_vec(mb * classes, 300), act());
  const std::vector<int32_t> labels = random_labels(mb, classes, 301);
  auto xent = be().plan_softmax_xent(logits_desc);
  DeviceTensor logits_d = upload(be(), logits, logits_desc);
  DeviceBuffer labels_d = be().allocate(labels.size() * sizeof(int32_t));
  be().copy_from_host(labels_d.data(), labels.data(), labels.size() * sizeof(int32_t));
  const auto* labels_ptr = static_cast<const int32_t*>(labels_d.data());
  DeviceTensor probs_d = upload(be(), nan_vec(mb * classes), TensorDesc::plain(Shape{mb, classes}));
  DeviceTensor loss_d = upload(be(), nan_vec(1), TensorDesc::plain(Shape{1}));
  xent->forward(logits_d.tensor(), labels_ptr, probs_d.buffer.f32(), loss_d.buffer.f32());
  const TensorDesc pred_desc = TensorDesc::plain(Shape{mb * classes}, act());
  auto mse = be().plan_mse(pred_desc);
  DeviceTensor pred_d = upload(be(), logits, pred_desc);
  DeviceTensor target_d = upload(be(), random_vec(mb * classes, 302), TensorDesc::plain(Shape{mb * classes}));
  for (const auto& [host, device] : std::vector<std::pair<LossGradScale, LossGradScale>>{
           {LossGradScale(scale), LossGradScale(1.0f, on_device)},
           {LossGradScale(scale * weight), LossGradScale(weight, on_device)}}) {
    SCOPED_TRACE("factor " + std::to_string(device.factor));
    DeviceTensor a = upload(be(), nan_vec(mb * classes), logits_desc), b = upload(be(), nan_vec(mb * classes), logits_desc);
    xent->backward(probs_d.buffer.f32(), labels_ptr, host, a.tensor());
    xent->backward(probs_d.buffer.f32(), labels_ptr, device, b.tensor());
    expect_identical(download(be(), b), download(be(), a), "softmax cross-entropy backward");
    DeviceTensor c = upload(be(), nan_vec(mb * classes), pred_desc), d = upload(be(), nan_vec(mb * classes), pred_desc);
    mse->backward(pred_d.tensor(), target_d.buffer.f32(), host, c.tensor());
    mse->backward(pred_d.tensor(), target_d.buffer.f32(), device, d.tensor());
    expect_identical(download(be(), d), download(be(), c), "mean-squared error backward");
  }
}

INSTANTIATE_TEST_SUITE_P(Precisions, CudaOpsAtPrecision, ::testing::ValuesIn(kPrecisions), precision_param_name);

}  // namespace
}  // namespace ts
