// The CUDA backend's channels-last layout (backend/cuda/cuda_layout.h): reorder round trips
// between plain and NHWC (bit exact in one data type, the NHWC storage order checked element by
// element), ops fed NHWC inputs or plain ones at their edges against the reference kernels, and
// a mixed-precision chain conv -> bn -> relu -> pool -> fc at fp16 that runs NHWC inside, and
// one training step of each ImageNet zoo model at fp16 (and resnet50 at tf32) against the same
// step at fp32 (NCHW) on the same GPU.
// Device tensors go in and out through backend.reorder (host f32 plain <-> any desc), so every
// comparison is in logical (NCHW) order. Every case needs a CUDA device and skips without one.
//
// Tolerances (relative to the reference's scale, as test_cuda_dnn_ops.cpp): fp32 1e-5, fp16
// 2e-3 per op, 1e-2 for the five-op fp16 chain (roundings of f16 activations compound), 0.1 of
// the logits' scale for a whole zoo model (a layout bug, such as a wrong flatten order, is an
// error of the order of the scale itself).
#include <gtest/gtest.h>

#include <algorithm>
#include <cmath>
#include <cstring>
#include <limits>
#include <string>
#include <tuple>
#include <vector>

#include <cuda_fp16.h>

#include "backend/cuda/cuda_backend.h"
#include "backend/cuda/cuda_layout.h"
#include "backend/cuda/cuda_ops.h"
#include "backend/ref/ref_kernels.h"
#include "nn/models.h"
#include "core/error.h"
#include "core/rng.h"

namespace ts {
namespace {

using Vec = std::vector<float>;

// One backend per test process, never destroyed (as test_cuda_dnn_ops.cpp).
CudaBackend& gpu() {
  static CudaBackend* backend = new CudaBackend(0);
  return *backend;
}

#define USE_PRECISION(p)                                                                           \
  do {                                                                                             \
    if (CudaBackend::device_count() == 0)                                                          \
      GTEST_SKIP() << "no CUDA device on this machine (the NHWC ops need one; run the gpu tests "  \
                      "on a GPU machine)";                                                         \
    if (!gpu().supports(Op::conv, p))                                                              \
      GTEST_SKIP() << precision_name(p) << " is not supported on " << gpu().describe().name;       \
    gpu().set_precision(p);                                                                        \
  } while (0)

Vec random_vec(size_t n, uint64_t seed, float lo = -1.0f, float hi = 1.0f) {
  Rng rng(seed);
  Vec v(n);
  for (float& x : v) x = lo + (hi - lo) * static_cast<float>(rng.uniform());
  return v;
}
// Multiples of 1/64 in [-2, 2): exact in f16 and bf16, so conversions round-trip bit for bit.
Vec exact_vec(size_t n, uint64_t seed) {
  Vec v = random_vec(n, seed, -2.0f, 2.0f);
  for (float& x : v) x = std::round(x * 64.0f) / 64.0f;
  return v;
}
Vec nan_vec(size_t n) { return Vec(n, std::numeric_limits<float>::quiet_NaN()); }

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

// A device tensor in `desc` and the memory it views.
struct DeviceTensor {
  DeviceBuffer buffer;
  Tensor tensor;
};

// `host` (f32, logical order) on the device in `desc`: copied plain f32, then reordered.
DeviceTensor upload(const Vec& host, const TensorDesc& desc) {
  CudaBackend& b = gpu();
  DeviceBuffer plain = b.allocate(host.size() * sizeof(float));
  b.copy_from_host(plain.data(), host.data(), host.size() * sizeof(float));
  DeviceTensor t{b.allocate(desc.bytes), {}};
  t.tensor = Tensor(t.buffer.data(), desc);
  b.reorder(Tensor(plain.data(), TensorDesc::plain(desc.dims)), t.tensor);
  b.synchronize();
  return t;
}
// f32 parameters (plain, as the arenas hold them).
DeviceTensor upload_f32(const Vec& host) { return upload(host, TensorDesc::plain(Shape{int64_t(host.size())})); }

// A device tensor's values as f32 in logical order (reordered to plain f32 first).
Vec download(const Tensor& t) {
  CudaBackend& b = gpu();
  const TensorDesc plain_desc = TensorDesc::plain(t.desc.dims);
  DeviceBuffer plain = b.allocate(plain_desc.bytes);
  b.reorder(t, Tensor(plain.data(), plain_desc));
  Vec host(static_cast<size_t>(plain_desc.numel()));
  b.copy_to_host(host.data(), plain.data(), plain_desc.bytes);
  return host;
}

// ---- reorder --------------------------------------------------------------------------------

// plain -> NHWC -> plain in each data type is bit exact, and NHWC stores (n,h,w,c) row-major.
TEST(CudaNhwcReorder, RoundTripsAndStoresChannelsLast) {
  USE_PRECISION(Precision::fp32);
  const Shape dims{2, 5, 3, 4};
  const int64_t N = 2, C = 5, H = 3, W = 4;
  const Vec values = exact_vec(dims.numel(), 1);
  for (DType t : {DType::f32, DType::f16, DType::bf16}) {
    const std::string name = std::string("reorder ") + dtype_name(t);
    const TensorDesc nhwc = cuda::nhwc_desc(dims, t);
    EXPECT_EQ(nhwc.bytes, size_t(dims.numel()) * dtype_bytes(t)) << name;
    DeviceTensor plain_dev = upload(values, TensorDesc::plain(dims, t));
    DeviceTensor nhwc_dev{gpu().allocate(nhwc.bytes), {}};
    nhwc_dev.tensor = Tensor(nhwc_dev.buffer.data(), nhwc);
    gpu().reorder(plain_dev.tensor, nhwc_dev.tensor);
    DeviceTensor back{gpu().allocate(nhwc.bytes), {}};
    back.tensor = Tensor(back.buffer.data(), TensorDesc::plain(dims, t));
    gpu().reorder(nhwc_dev.tensor, back.tensor);
    std::vector<unsigned char> before(nhwc.bytes), after(nhwc.bytes);
    gpu().copy_to_host(before.data(), plain_dev.tensor.data, nhwc.bytes);
    gpu().copy_to_host(after.data(), back.tensor.data, nhwc.bytes);
    EXPECT_EQ(std::memcmp(before.data(), after.data(), nhwc.bytes), 0) << name << ": plain -> NHWC -> plain";
    EXPECT_EQ(download(nhwc_dev.tensor), values) << name << ": NHWC read back in logical order";
  }
  // The storage order itself, in f32: element (n,h,w,c) of the NHWC buffer is (n,c,h,w).
  DeviceTensor nhwc_dev = upload(values, cuda::nhwc_desc(dims, DType::f32));
  Vec raw(values.size());
  gpu().copy_to_host(raw.data(), nhwc_dev.tensor.data, raw.size() * sizeof(float));
  for (int64_t n = 0; n < N; ++n)
    for (int64_t c = 0; c < C; ++c)
      for (int64_t h = 0; h < H; ++h)
        for (int64_t w = 0; w < W; ++w)
          ASSERT_EQ(raw[size_t(((n * H + h) * W + w) * C + c)], values[size_t(((n * C + c) * H + h) * W + w)])
              << "(n,c,h,w) = (" << n << "," << c << "," << h << "," << w << ")";
}

TEST(CudaNhwcReorder, ConvertsTypeAndLayoutAtOnceAndRefusesOthers) {
  USE_PRECISION(Precision::fp32);
  const Shape dims{3, 4, 2, 5};
  const Vec values = exact_vec(dims.numel(), 2);  // exact in f16: the conversion loses nothing
  DeviceTensor f16_nhwc = upload(values, cuda::nhwc_desc(dims, DType::f16));
  EXPECT_EQ(download(f16_nhwc.tensor), values);
  DeviceTensor bf16_plain{gpu().allocate(dims.numel() * 2), {}};
  bf16_plain.tensor = Tensor(bf16_plain.buffer.data(), TensorDesc::plain(dims, DType::bf16));
  gpu().reorder(f16_nhwc.tensor, bf16_plain.tensor);
  EXPECT_EQ(download(bf16_plain.tensor), values) << "NHWC f16 -> plain bf16";
  TensorDesc foreign = TensorDesc::plain(dims);
  foreign.layout = 7;  // another backend's layout id
  EXPECT_THROW(gpu().reorder(Tensor(f16_nhwc.tensor.data, foreign), bf16_plain.tensor), ConfigError);
  TensorDesc flat_nhwc = cuda::nhwc_desc(dims, DType::f16);
  flat_nhwc.dims = Shape{dims.numel()};  // NHWC is 4-D only
  EXPECT_THROW(gpu().reorder(Tensor(f16_nhwc.tensor.data, flat_nhwc), bf16_plain.tensor), ConfigError);
}

// ---- ops at the layout's edges --------------------------------------------------------------

// conv at fp16 from a plain f32 src (the input image) to its NHWC f16 dst and back; at fp32
// from an NHWC src (computed in NCHW, converted at the edge); grouped at fp16 (NCHW inside).
TEST(CudaNhwcOps, ConvConvertsAtItsEdges) {
  struct Case { Precision precision; const char* conv; bool nhwc_src; };
  for (const Case& k : {Case{Precision::fp16, "conv:mb2_ic3oc8_ih9iw7_kh3kw3_sh2sw2_ph1pw1_g1_relu", false},
                        Case{Precision::fp32, "conv:mb2_ic4oc8_ih6iw6_kh3kw3_sh1sw1_ph1pw1_g1", true},
                        Case{Precision::fp16, "conv:mb2_ic8oc8_ih6iw6_kh3kw3_sh1sw1_ph1pw1_g8", true},
                        Case{Precision::fp16, "conv:mb2_ic8oc16_ih5iw5_kh1kw1_sh1sw1_ph0pw0_g1", true}}) {
    USE_PRECISION(k.precision);
    const ConvDesc d = ConvDesc::parse(k.conv);
    const std::string name = d.str() + " at " + precision_name(k.precision);
    const double tol = k.precision == Precision::fp32 ? 1e-5 : 2e-3;
    const Shape src_dims{d.mb, d.ic, d.ih, d.iw}, dst_dims{d.mb, d.oc, d.oh(), d.ow()};
    const DType t = k.precision == Precision::fp16 ? DType::f16 : DType::f32;
    const TensorDesc src_desc = k.nhwc_src ? cuda::nhwc_desc(src_dims, t) : TensorDesc::plain(src_dims);
    auto op = gpu().plan_conv(d, src_desc, TensorDesc::any(dst_dims));
    const bool nhwc_dst = k.precision != Precision::fp32 && d.groups == 1;
    EXPECT_EQ(cuda::is_nhwc(op->dst_desc()), nhwc_dst) << name << ": dst " << op->dst_desc().str();
    const Vec src = random_vec(src_dims.numel(), 3), wei = random_vec(d.weight_count(), 4);
    const Vec bia = random_vec(d.oc, 5), diff_dst = random_vec(dst_dims.numel(), 6);
    DeviceTensor src_dev = upload(src, src_desc), wei_dev = upload_f32(wei), bia_dev = upload_f32(bia);
    DeviceTensor dst_dev = upload(nan_vec(dst_dims.numel()), op->dst_desc());
    op->forward(src_dev.tensor, wei_dev.tensor.f32(), bia_dev.tensor.f32(), dst_dev.tensor);
    Vec dst_ref(dst_dims.numel()), diff_src_ref(src_dims.numel()), diff_wei_ref(wei.size()), diff_bia_ref(d.oc);
    ref::conv_forward(d, src.data(), wei.data(), bia.data(), dst_ref.data());
    expect_close(download(dst_dev.tensor), dst_ref, tol, name + " forward");
    DeviceTensor diff_dst_dev = upload(diff_dst, op->dst_desc()), diff_src_dev = upload(nan_vec(src.size()), src_desc);
    DeviceTensor diff_wei_dev = upload_f32(nan_vec(wei.size())), diff_bia_dev = upload_f32(nan_vec(d.oc));
    op->backward(src_dev.tensor, diff_dst_dev.tensor, wei_dev.tensor.f32(), diff_src_dev.tensor,
                 diff_wei_dev.tensor.f32(), diff_bia_dev.tensor.f32());
    ref::conv_backward_data(d, diff_dst.data(), wei.data(), diff_src_ref.data());
    ref::conv_backward_weights(d, src.data(), diff_dst.data(), diff_wei_ref.data(), diff_bia_ref.data());
    expect_close(download(diff_src_dev.tensor), diff_src_ref, tol, name + " diff_src (in src's desc)");
    expect_close(download(diff_wei_dev.tensor), diff_wei_ref, tol, name + " diff_wei (oc,ic,kh,kw) f32");
    expect_close(download(diff_bia_dev.tensor), diff_bia_ref, tol, name + " diff_bia");
  }
}

// A fixed plain output request of an op that computes in NHWC is honoured (a global average
// pool written plain f16), and its diff_src comes back in src's NHWC desc.
TEST(CudaNhwcOps, PoolHonoursAFixedPlainDst) {
  USE_PRECISION(Precision::fp16);
  const PoolDesc d = PoolDesc::parse("pool:avg_mb2c8_ih7iw7_kh7kw7_sh1sw1_ph0pw0");
  const Shape src_dims{d.mb, d.c, d.ih, d.iw}, dst_dims{d.mb, d.c, 1, 1};
  const TensorDesc src_desc = cuda::nhwc_desc(src_dims, DType::f16), dst_desc = TensorDesc::plain(dst_dims, DType::f16);
  auto op = gpu().plan_pool(d, src_desc, dst_desc);
  ASSERT_EQ(op->dst_desc(), dst_desc);
  const Vec src = random_vec(src_dims.numel(), 7), diff_dst = random_vec(dst_dims.numel(), 8);
  DeviceTensor src_dev = upload(src, src_desc), dst_dev = upload(nan_vec(dst_dims.numel()), dst_desc);
  op->forward(src_dev.tensor, dst_dev.tensor, nullptr);
  Vec dst_ref(dst_dims.numel()), diff_src_ref(src.size());
  std::vector<unsigned char> ws_ref(ref::pool_workspace_bytes(d) + 1);
  ref::pool_forward(d, src.data(), dst_ref.data(), ws_ref.data());
  expect_close(download(dst_dev.tensor), dst_ref, 2e-3, d.str() + " forward");
  DeviceTensor diff_dst_dev = upload(diff_dst, dst_desc), diff_src_dev = upload(nan_vec(src.size()), src_desc);
  op->backward(diff_dst_dev.tensor, nullptr, diff_src_dev.tensor);
  ref::pool_backward(d, diff_dst.data(), ws_ref.data(), diff_src_ref.data());
  expect_close(download(diff_src_dev.tensor), diff_src_ref, 2e-3, d.str() + " backward");
}

// add of an NHWC a and a plain b (dst in a's desc); concat of NHWC inputs and of mixed ones;
// dropout of an NHWC src (mask in logical order). Exact values: the results match bit for bit.
TEST(CudaNhwcOps, AddConcatDropoutFollowTheirInputs) {
  USE_PRECISION(Precision::fp16);
  const Shape dims{2, 3, 4, 5};
  const TensorDesc nhwc = cuda::nhwc_desc(dims, DType::f16), plain = TensorDesc::plain(dims, DType::f16);
  const Vec a = exact_vec(dims.numel(), 9), b = exact_vec(dims.numel(), 10);
  auto add = gpu().plan_add(nhwc, plain, true);
  ASSERT_EQ(add->dst_desc(), nhwc);
  DeviceTensor a_dev = upload(a, nhwc), b_dev = upload(b, plain), sum_dev = upload(nan_vec(a.size()), nhwc);
  add->forward(a_dev.tensor, b_dev.tensor, sum_dev.tensor);
  Vec sum_ref(a.size());
  ref::add_relu(dims.numel(), a.data(), b.data(), sum_ref.data());
  EXPECT_EQ(download(sum_dev.tensor), sum_ref) << "add_relu NHWC + plain";

  for (bool mixed : {false, true}) {  // inputs (2,3,4,5) and (2,2,4,5); mixed: the second plain
    const Shape second_dims{2, 2, 4, 5}, cat_dims{2, 5, 4, 5};
    const TensorDesc second =
        mixed ? TensorDesc::plain(second_dims, DType::f16) : cuda::nhwc_desc(second_dims, DType::f16);
    auto cat = gpu().plan_concat({nhwc, second}, TensorDesc::any(cat_dims));
    ASSERT_EQ(cat->dst_desc(), cuda::nhwc_desc(cat_dims, DType::f16)) << "concat takes the first input's layout";
    const Vec c = exact_vec(second_dims.numel(), 11), diff = exact_vec(cat_dims.numel(), 12);
    DeviceTensor c_dev = upload(c, second), cat_dev = upload(nan_vec(diff.size()), cat->dst_desc());
    cat->forward({a_dev.tensor, c_dev.tensor}, cat_dev.tensor);
    Vec cat_ref(diff.size()), diff_a_ref(a.size()), diff_c_ref(c.size());
    ref::concat_forward(2, 20, {3, 2}, {a.data(), c.data()}, cat_ref.data());
    EXPECT_EQ(download(cat_dev.tensor), cat_ref) << "concat forward, mixed " << mixed;
    DeviceTensor diff_dev = upload(diff, cat->dst_desc());
    DeviceTensor diff_a = upload(nan_vec(a.size()), nhwc), diff_c = upload(nan_vec(c.size()), second);
    cat->backward(diff_dev.tensor, {diff_a.tensor, diff_c.tensor});
    ref::concat_backward(2, 20, {3, 2}, diff.data(), {diff_a_ref.data(), diff_c_ref.data()});
    EXPECT_EQ(download(diff_a.tensor), diff_a_ref) << "concat backward, mixed " << mixed;
    EXPECT_EQ(download(diff_c.tensor), diff_c_ref) << "concat backward (second input), mixed " << mixed;
  }

  auto dropout = gpu().plan_dropout(nhwc);
  ASSERT_TRUE(dropout->dst_desc().is_plain()) << "dropout's dst is plain (ops.h)";
  std::vector<uint8_t> mask(a.size());
  for (size_t i = 0; i < mask.size(); ++i) mask[i] = (i * 7) % 3 != 0;
  DeviceBuffer mask_dev = gpu().allocate(mask.size());
  gpu().copy_from_host(mask_dev.data(), mask.data(), mask.size());
  DeviceTensor drop_dev = upload(nan_vec(a.size()), dropout->dst_desc()), diff_src = upload(nan_vec(a.size()), nhwc);
  dropout->forward(static_cast<const uint8_t*>(mask_dev.data()), 2.0f, a_dev.tensor, drop_dev.tensor);
  Vec drop_ref(a.size()), diff_ref(a.size());
  ref::dropout_apply(dims.numel(), mask.data(), 2.0f, a.data(), drop_ref.data());
  EXPECT_EQ(download(drop_dev.tensor), drop_ref) << "dropout forward of an NHWC src";
  DeviceTensor diff_dst = upload(b, dropout->dst_desc());
  dropout->backward(static_cast<const uint8_t*>(mask_dev.data()), 2.0f, diff_dst.tensor, diff_src.tensor);
  ref::dropout_apply(dims.numel(), mask.data(), 2.0f, b.data(), diff_ref.data());
  EXPECT_EQ(download(diff_src.tensor), diff_ref) << "dropout backward into the NHWC diff_src";
}

// ---- a chain as a net runs it ---------------------------------------------------------------

// fp16: image (2,3,8,8) plain f32 -> conv 3->8 (NHWC f16) -> bn -> relu -> max pool 2x2 ->
// (2,8,4,4) NHWC -> fc 128->5 (reads the logical (c,h,w) flatten order); then the fc's diff_src
// back into the pool's NHWC desc. Against the ref chain in f32.
TEST(CudaNhwcChain, ConvBnReluPoolFcAtFp16) {
  USE_PRECISION(Precision::fp16);
  const ConvDesc cd = ConvDesc::parse("conv:mb2_ic3oc8_ih8iw8_kh3kw3_sh1sw1_ph1pw1_g1");
  const BnDesc bd = BnDesc::parse("bn:mb2c8_h8w8");
  const EltwiseDesc ed = EltwiseDesc::parse("eltwise:relu_n1024");
  const PoolDesc pd = PoolDesc::parse("pool:max_mb2c8_ih8iw8_kh2kw2_sh2sw2_ph0pw0");
  const FcDesc fd = FcDesc::parse("fc:mb2_ic128oc5");
  const Shape img{2, 3, 8, 8}, act{2, 8, 8, 8}, pooled{2, 8, 4, 4};
  auto conv = gpu().plan_conv(cd, TensorDesc::plain(img), TensorDesc::any(act));
  auto bn = gpu().plan_batchnorm(bd, conv->dst_desc(), TensorDesc::any(act));
  auto relu = gpu().plan_eltwise(ed, bn->dst_desc(), TensorDesc::any(act));
  auto pool = gpu().plan_pool(pd, relu->dst_desc(), TensorDesc::any(pooled));
  auto fc = gpu().plan_fc(fd, pool->dst_desc(), TensorDesc::any(Shape{2, 5}));
  for (const TensorDesc* d : {&conv->dst_desc(), &bn->dst_desc(), &relu->dst_desc(), &pool->dst_desc()})
    EXPECT_EQ(*d, cuda::nhwc_desc(d->dims, DType::f16)) << "fp16 activations are NHWC f16";

  const Vec x = random_vec(img.numel(), 20), cw = random_vec(cd.weight_count(), 21), cb = random_vec(8, 22);
  const Vec scale = random_vec(8, 23, 0.5f, 1.5f), shift = random_vec(8, 24);
  const Vec fw = random_vec(5 * 128, 25), fb = random_vec(5, 26), diff_y = random_vec(10, 27);
  DeviceTensor x_dev = upload(x, TensorDesc::plain(img)), cw_dev = upload_f32(cw), cb_dev = upload_f32(cb);
  DeviceTensor scale_dev = upload_f32(scale), shift_dev = upload_f32(shift), fw_dev = upload_f32(fw);
  DeviceTensor fb_dev = upload_f32(fb), mean = upload_f32(nan_vec(8)), var = upload_f32(nan_vec(8));
  DeviceTensor c_dev = upload(nan_vec(act.numel()), conv->dst_desc());
  DeviceTensor n_dev = upload(nan_vec(act.numel()), bn->dst_desc());
  DeviceTensor r_dev = upload(nan_vec(act.numel()), relu->dst_desc());
  DeviceTensor p_dev = upload(nan_vec(pooled.numel()), pool->dst_desc());
  DeviceTensor y_dev = upload(nan_vec(10), fc->dst_desc());
  DeviceBuffer pool_ws = gpu().allocate(std::max<size_t>(pool->workspace_bytes(), 1));
  conv->forward(x_dev.tensor, cw_dev.tensor.f32(), cb_dev.tensor.f32(), c_dev.tensor);
  bn->forward_training(c_dev.tensor, scale_dev.tensor.f32(), shift_dev.tensor.f32(), n_dev.tensor, mean.tensor.f32(),
                       var.tensor.f32());
  relu->forward(n_dev.tensor, r_dev.tensor);
  pool->forward(r_dev.tensor, p_dev.tensor, pool_ws.data());
  fc->forward(p_dev.tensor, fw_dev.tensor.f32(), fb_dev.tensor.f32(), y_dev.tensor);

  Vec c_ref(act.numel()), n_ref(act.numel()), r_ref(act.numel()), p_ref(pooled.numel()), y_ref(10);
  Vec mean_ref(8), var_ref(8);
  std::vector<unsigned char> ws_ref(ref::pool_workspace_bytes(pd) + 1);
  ref::conv_forward(cd, x.data(), cw.data(), cb.data(), c_ref.data());
  ref::batchnorm_forward_training(bd, c_ref.data(), scale.data(), shift.data(), n_ref.data(), mean_ref.data(),
                                  var_ref.data());
  ref::eltwise_forward(ed, n_ref.data(), r_ref.data());
  ref::pool_forward(pd, r_ref.data(), p_ref.data(), ws_ref.data());
  ref::fc_forward(fd, p_ref.data(), fw.data(), fb.data(), y_ref.data());
  expect_close(download(c_dev.tensor), c_ref, 2e-3, "chain conv");
  expect_close(download(n_dev.tensor), n_ref, 1e-2, "chain bn");
  expect_close(download(mean.tensor), mean_ref, 2e-3, "chain bn batch mean");
  expect_close(download(var.tensor), var_ref, 1e-2, "chain bn biased variance");
  expect_close(download(p_dev.tensor), p_ref, 1e-2, "chain pool");
  expect_close(download(y_dev.tensor), y_ref, 1e-2, "chain fc logits");

  // The fc's diff_src in the pool's NHWC desc, from the device's own pooled activations.
  const Vec p_got = download(p_dev.tensor);
  DeviceTensor diff_y_dev = upload(diff_y, fc->dst_desc()), diff_p = upload(nan_vec(pooled.numel()), pool->dst_desc());
  DeviceTensor diff_fw = upload_f32(nan_vec(fw.size())), diff_fb = upload_f32(nan_vec(5));
  fc->backward(p_dev.tensor, diff_y_dev.tensor, fw_dev.tensor.f32(), diff_p.tensor, diff_fw.tensor.f32(),
               diff_fb.tensor.f32());
  Vec diff_p_ref(pooled.numel()), diff_fw_ref(fw.size()), diff_fb_ref(5);
  ref::fc_backward_data(fd, diff_y.data(), fw.data(), diff_p_ref.data());
  ref::fc_backward_weights(fd, p_got.data(), diff_y.data(), diff_fw_ref.data(), diff_fb_ref.data());
  expect_close(download(diff_p.tensor), diff_p_ref, 2e-3, "chain fc diff_src (NHWC)");
  expect_close(download(diff_fw.tensor), diff_fw_ref, 2e-3, "chain fc diff_wei");
  expect_close(download(diff_fb.tensor), diff_fb_ref, 2e-3, "chain fc diff_bia");
}

// ---- the zoo ----------------------------------------------------------------------------------

// One training step (batch 2, synthetic images, dropout off) of a zoo model on the GPU.
struct ZooStep {
  float loss = 0.0f;
  Vec logits;        // (2, 1000), logical order
  Vec last_grads;    // the gradient of the last layer with parameters (the classifier)
  size_t nonfinite_grads = 0;
};

ZooStep zoo_step(const std::string& model, Precision precision) {
  gpu().set_precision(precision);
  const ModelInput in = model_expected_input(model);
  std::unique_ptr<Net> net = build_model(model, gpu(), in, 3, 0.0);
  net->set_batch(2);
  Rng rng(5);
  std::vector<float> images(static_cast<size_t>(2 * in.sample.numel()));
  for (float& v : images) v = static_cast<float>(rng.uniform());
  const std::vector<int32_t> labels{17, 923};
  ZooStep step;
  step.loss = net->forward(images.data(), labels.data(), nullptr, Mode::train);
  const float* logits = net->output();
  step.logits.assign(logits, logits + 2 * net->output_shape().numel());
  net->backward();
  Vec grads(static_cast<size_t>(net->param_count()));
  gpu().copy_to_host(grads.data(), net->grads(), grads.size() * sizeof(float));
  for (float g : grads) step.nonfinite_grads += !std::isfinite(g);
  for (int node = net->node_count() - 1; node > 0 && step.last_grads.empty(); --node) {
    const ParamRange r = net->param_range(node);
    if (r.count > 0) step.last_grads.assign(grads.begin() + r.offset, grads.begin() + r.offset + r.count);
  }
  return step;
}

using ModelAndPrecision = std::tuple<const char*, Precision>;
class CudaNhwcZoo : public ::testing::TestWithParam<ModelAndPrecision> {};

// Every layer of the model plans and runs with NHWC activations (conv, bn, pool, add, concat,
// depthwise convs at their NCHW edges, the fc after the global pool); the logits, the loss and
// the classifier's gradient agree with the fp32 (NCHW) step, and no gradient is inf or NaN.
TEST_P(CudaNhwcZoo, OneStepMatchesFp32) {
  const auto [model, precision] = GetParam();
  USE_PRECISION(precision);
  const std::string name = std::string(model) + " at " + precision_name(precision);
  const ZooStep fast = zoo_step(model, precision);
  const ZooStep fp32 = zoo_step(model, Precision::fp32);
  EXPECT_EQ(fast.nonfinite_grads, 0u) << name;
  ASSERT_TRUE(std::isfinite(fast.loss)) << name;
  EXPECT_NEAR(fast.loss, fp32.loss, 0.02 * std::fabs(fp32.loss)) << name << " loss";
  expect_close(fast.logits, fp32.logits, 0.1, name + " logits");
  expect_close(fast.last_grads, fp32.last_grads, 0.1, name + " classifier gradient");
}

INSTANTIATE_TEST_SUITE_P(Models, CudaNhwcZoo,
                         ::testing::Values(ModelAndPrecision{"resnet50", Precision::fp16},
                                           ModelAndPrecision{"resnet50", Precision::tf32},
                                           ModelAndPrecision{"inception_v3", Precision::fp16},
                                           ModelAndPrecision{"mobilenet_v2", Precision::fp16},
                                           ModelAndPrecision{"vgg16", Precision::fp16},
                                           ModelAndPrecision{"alexnet", Precision::fp16}),
                         [](const ::testing::TestParamInfo<ModelAndPrecision>& info) {
                           return std::string(std::get<0>(info.param)) + "_" + precision_name(std::get<1>(info.param));
                         });

// ---- planning (no device needed) ------------------------------------------------------------

TEST(CudaNhwcPlanning, LayoutChoiceAndDescs) {
  const Shape four{8, 16, 7, 7}, two{8, 16};
  EXPECT_EQ(cuda::preferred_layout(Precision::fp32, four), kPlainLayout) << "fp32 stays NCHW";
  for (Precision p : {Precision::tf32, Precision::fp16, Precision::bf16}) {
    EXPECT_EQ(cuda::preferred_layout(p, four), cuda::kNhwcLayout) << precision_name(p);
    EXPECT_EQ(cuda::preferred_layout(p, two), kPlainLayout) << precision_name(p) << ": NHWC is 4-D only";
  }
  const TensorDesc d = cuda::nhwc_desc(four, DType::bf16);
  EXPECT_EQ(d.dims, four) << "dims stay logical";
  EXPECT_EQ(d.bytes, size_t(four.numel()) * 2);
  EXPECT_TRUE(cuda::is_nhwc(d));
  EXPECT_TRUE(cuda::is_cuda_layout(d));
  EXPECT_EQ(cuda::layout_desc(two, DType::f16, cuda::kNhwcLayout), TensorDesc::plain(two, DType::f16));
  TensorDesc flat = d;
  flat.dims = Shape{four.numel()};
  EXPECT_FALSE(cuda::is_cuda_layout(flat));
  // Planning refuses these before it touches the device (a context without one).
  cuda::CudaContext ctx;
  ctx.precision = Precision::fp16;
  const EltwiseDesc relu = EltwiseDesc::parse("eltwise:relu_n6272");
  EXPECT_THROW(cuda::plan_eltwise(ctx, relu, flat, TensorDesc::any(flat.dims)), ConfigError) << "NHWC is 4-D only";
  const PoolDesc pool = PoolDesc::parse("pool:max_mb8c16_ih7iw7_kh2kw2_sh1sw1_ph0pw0");
  EXPECT_THROW(cuda::plan_pool(ctx, pool, d, cuda::nhwc_desc(Shape{8, 16, 36, 1}, DType::bf16)), ConfigError)
      << "an NHWC output must have the op's dims";
}

}  // namespace
}  // namespace ts
