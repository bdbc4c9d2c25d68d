// The reference backend against small cases computed by hand (and, for batch norm, against
// finite differences): if the oracle is wrong, every cpu/cuda comparison is meaningless.
#include <gtest/gtest.h>

#include <cmath>
#include <vector>

#include "backend/backend.h"
#include "backend/backend_factory.h"
#include "backend/ref/ref_backend.h"
#include "backend/ref/ref_kernels.h"
#include "core/error.h"

namespace ts {
namespace {

using Vec = std::vector<float>;

void expect_near_all(const Vec& got, const Vec& want, float tol, const std::string& what) {
  ASSERT_EQ(got.size(), want.size()) << what;
  for (size_t i = 0; i < got.size(); ++i)
    EXPECT_NEAR(got[i], want[i], tol) << what << " at element " << i;
}

TEST(RefBackend, FactoryAndSupports) {
  auto be = make_backend("ref");
  EXPECT_EQ(be->name(), "ref");
  EXPECT_TRUE(be->supports(Op::conv, Precision::fp32));
  EXPECT_TRUE(be->supports(Op::sgd, Precision::fp32));
  EXPECT_FALSE(be->supports(Op::conv, Precision::bf16));
  EXPECT_FALSE(be->supports(Op::fc, Precision::fp16));
  EXPECT_THROW(make_backend("nosuch"), ConfigError);
  try {
    make_backend("nosuch");
  } catch (const ConfigError& e) {
    EXPECT_NE(std::string(e.what()).find("ref"), std::string::npos) << e.what();
  }
  EXPECT_STREQ(precision_name(Precision::bf16), "bf16");
}

// src 3x3 = 1..9, kernel 2x2 of ones, stride 1, no padding: window sums.
TEST(RefBackend, ConvForwardBackwardSimple) {
  ConvDesc d = ConvDesc::parse("conv:mb1_ic1oc1_ih3iw3_kh2kw2_sh1sw1_ph0pw0_g1");
  Vec src{1, 2, 3, 4, 5, 6, 7, 8, 9}, wei(4, 1.0f), bia{0.5f}, dst(4);
  ref::conv_forward(d, src.data(), wei.data(), bia.data(), dst.data());
  expect_near_all(dst, {12.5f, 16.5f, 24.5f, 28.5f}, 1e-6f, d.str());

  // diff_dst of ones: diff_src counts the windows covering each pixel.
  Vec diff_dst(4, 1.0f), diff_src(9, -7.0f);
  ref::conv_backward_data(d, diff_dst.data(), wei.data(), diff_src.data());
  expect_near_all(diff_src, {1, 2, 1, 2, 4, 2, 1, 2, 1}, 1e-6f, d.str());

  Vec diff_wei(4, -7.0f), diff_bia(1, -7.0f);
  ref::conv_backward_weights(d, src.data(), diff_dst.data(), diff_wei.data(), diff_bia.data());
  expect_near_all(diff_wei, {12, 16, 24, 28}, 1e-6f, d.str());
  expect_near_all(diff_bia, {4}, 1e-6f, d.str());
}

// Padding 1 and stride 2 with a 3x3 kernel of ones: the four corner windows see 2x2 blocks.
TEST(RefBackend, ConvPaddingStride) {
  ConvDesc d = ConvDesc::parse("conv:mb1_ic1oc1_ih3iw3_kh3kw3_sh2sw2_ph1pw1_g1_nobias");
  ASSERT_EQ(d.oh(), 2);
  Vec src{1, 2, 3, 4, 5, 6, 7, 8, 9}, wei(9, 1.0f), dst(4);
  ref::conv_forward(d, src.data(), wei.data(), nullptr, dst.data());
  expect_near_all(dst, {12, 16, 24, 28}, 1e-6f, d.str());

  // Each input pixel is seen by as many windows as corners it touches: the centre by all four.
  Vec diff_dst(4, 1.0f), diff_src(9);
  ref::conv_backward_data(d, diff_dst.data(), wei.data(), diff_src.data());
  expect_near_all(diff_src, {1, 2, 1, 2, 4, 2, 1, 2, 1}, 1e-6f, d.str());

  // diff_wei(ky,kx) = sum of the src pixels that tap (ky,kx) met, over the 4 windows.
  Vec diff_wei(9);
  ref::conv_backward_weights(d, src.data(), diff_dst.data(), diff_wei.data(), nullptr);
  // tap (0,0) meets pixels (1,1) only -> 5; (0,1) meets (1,0),(1,2) -> 4+6 ...
  expect_near_all(diff_wei, {5, 10, 5, 10, 20, 10, 5, 10, 5}, 1e-6f, d.str());
}

// Two groups with 1x1 kernels: each output channel sees only its own input channel.
TEST(RefBackend, ConvGroups) {
  ConvDesc d = ConvDesc::parse("conv:mb1_ic2oc2_ih1iw2_kh1kw1_sh1sw1_ph0pw0_g2");
  Vec src{1, 2, 3, 4}, wei{2, 3}, bia{0, 1}, dst(4);
  ref::conv_forward(d, src.data(), wei.data(), bia.data(), dst.data());
  expect_near_all(dst, {2, 4, 10, 13}, 1e-6f, d.str());
  Vec diff_dst{1, 1, 1, 2}, diff_src(4), diff_wei(2), diff_bia(2);
  ref::conv_backward_data(d, diff_dst.data(), wei.data(), diff_src.data());
  expect_near_all(diff_src, {2, 2, 3, 6}, 1e-6f, d.str());
  ref::conv_backward_weights(d, src.data(), diff_dst.data(), diff_wei.data(), diff_bia.data());
  expect_near_all(diff_wei, {3, 11}, 1e-6f, d.str());
  expect_near_all(diff_bia, {2, 3}, 1e-6f, d.str());
}

TEST(RefBackend, MaxPool) {
  PoolDesc d = PoolDesc::parse("pool:max_mb1c1_ih4iw4_kh2kw2_sh2sw2_ph0pw0");
  Vec src{1, 5, 2, 0,  //
          3, 4, 8, 1,  //
          0, 0, -1, -2,  //
          9, 0, -3, -4};
  ASSERT_EQ(ref::pool_workspace_bytes(d), 4 * sizeof(int32_t));
  std::vector<int32_t> ws(4);
  Vec dst(4);
  ref::pool_forward(d, src.data(), dst.data(), ws.data());
  expect_near_all(dst, {5, 8, 9, -1}, 0, d.str());
  EXPECT_EQ(ws, (std::vector<int32_t>{1, 6, 12, 10}));
  Vec diff_dst{1, 2, 3, 4}, diff_src(16, -7.0f);
  ref::pool_backward(d, diff_dst.data(), ws.data(), diff_src.data());
  expect_near_all(diff_src, {0, 1, 0, 0, 0, 0, 2, 0, 0, 0, 4, 0, 3, 0, 0, 0}, 0, d.str());
}

// Overlapping windows route the gradient of both outputs to a shared maximum.
TEST(RefBackend, MaxPoolOverlapAndPadding) {
  PoolDesc d = PoolDesc::parse("pool:max_mb1c1_ih1iw3_kh1kw3_sh1sw1_ph0pw1");
  Vec src{-1, -2, -3}, dst(3);
  std::vector<int32_t> ws(3);
  ref::pool_forward(d, src.data(), dst.data(), ws.data());
  expect_near_all(dst, {-1, -1, -2}, 0, d.str());  // padding never wins, even over negatives
  Vec diff_dst{1, 1, 1}, diff_src(3);
  ref::pool_backward(d, diff_dst.data(), ws.data(), diff_src.data());
  expect_near_all(diff_src, {2, 1, 0}, 0, d.str());
}

// Average pooling excludes the padding from the divisor.
TEST(RefBackend, AvgPoolExcludesPadding) {
  PoolDesc d = PoolDesc::parse("pool:avg_mb1c1_ih2iw2_kh2kw2_sh1sw1_ph1pw1");
  EXPECT_EQ(ref::pool_workspace_bytes(d), 0u);
  Vec src{1, 2, 3, 4}, dst(9);
  ref::pool_forward(d, src.data(), dst.data(), nullptr);
  expect_near_all(dst, {1, 1.5f, 2, 2, 2.5f, 3, 3, 3.5f, 4}, 1e-6f, d.str());
  // Each pixel gets 1/count from every window containing it.
  Vec diff_dst(9, 1.0f), diff_src(4);
  ref::pool_backward(d, diff_dst.data(), nullptr, diff_src.data());
  const float per = 1.0f + 0.5f + 0.5f + 0.25f;  // corner window, two edge windows, centre
  expect_near_all(diff_src, {per, per, per, per}, 1e-6f, d.str());
}

TEST(RefBackend, FullyConnected) {
  FcDesc d = FcDesc::parse("fc:mb2_ic2oc3");
  Vec src{1, 2, 3, 4}, wei{1, 0, 0, 1, 1, 1}, bia{0, 0, 1}, dst(6);
  ref::fc_forward(d, src.data(), wei.data(), bia.data(), dst.data());
  expect_near_all(dst, {1, 2, 4, 3, 4, 8}, 1e-6f, d.str());
  Vec diff_dst{1, 0, 1, 0, 2, 0}, diff_src(4), diff_wei(6), diff_bia(3);
  ref::fc_backward_data(d, diff_dst.data(), wei.data(), diff_src.data());
  expect_near_all(diff_src, {2, 1, 0, 2}, 1e-6f, d.str());
  ref::fc_backward_weights(d, src.data(), diff_dst.data(), diff_wei.data(), diff_bia.data());
  expect_near_all(diff_wei, {1, 2, 6, 8, 1, 2}, 1e-6f, d.str());
  expect_near_all(diff_bia, {1, 2, 1}, 1e-6f, d.str());
}

TEST(RefBackend, BatchNormForward) {
  BnDesc d = BnDesc::parse("bn:mb2c1_h1w2");
  Vec src{1, 2, 3, 4}, scale{2}, shift{1}, dst(4), mean(1), var(1);
  ref::batchnorm_forward_training(d, src.data(), scale.data(), shift.data(), dst.data(), mean.data(),
                                var.data());
  EXPECT_NEAR(mean[0], 2.5f, 1e-6f);
  EXPECT_NEAR(var[0], 1.25f, 1e-6f);  // biased: divide by 4, not 3
  const float inv = 1.0f / std::sqrt(1.25f + 1e-5f);
  expect_near_all(dst, {1 - 3 * inv, 1 - inv, 1 + inv, 1 + 3 * inv}, 1e-5f, d.str());

  Vec rmean{1}, rvar{4}, idst(4);
  ref::batchnorm_forward_inference(d, src.data(), scale.data(), shift.data(), rmean.data(),
                                 rvar.data(), idst.data());
  const float s = 2.0f / std::sqrt(4.0f + 1e-5f);
  expect_near_all(idst, {1, 1 + s, 1 + 2 * s, 1 + 3 * s}, 1e-5f, d.str());
}

// Batch-norm backward against central finite differences of L = sum(r * dst).
TEST(RefBackend, BatchNormBackwardFiniteDifference) {
  BnDesc d = BnDesc::parse("bn:mb2c2_h1w3");
  const size_t n = 12;
  Vec src{0.3f, -1.2f, 0.7f, 2.0f, 0.1f, -0.4f, 1.5f, 0.2f, -0.9f, 0.6f, 1.1f, -2.0f};
  Vec r{0.5f, -1.0f, 2.0f, 0.3f, 0.7f, -0.2f, 1.0f, 0.4f, -0.6f, 0.9f, -1.3f, 0.8f};
  Vec scale{1.5f, -0.7f}, shift{0.2f, 0.1f};
  auto loss = [&](const Vec& x, const Vec& g, const Vec& b) {
    Vec dst(n), m(2), v(2);
    ref::batchnorm_forward_training(d, x.data(), g.data(), b.data(), dst.data(), m.data(), v.data());
    double l = 0;
    for (size_t i = 0; i < n; ++i) l += double(r[i]) * dst[i];
    return l;
  };
  Vec dst(n), mean(2), var(2), diff_src(n), diff_scale(2), diff_shift(2);
  ref::batchnorm_forward_training(d, src.data(), scale.data(), shift.data(), dst.data(), mean.data(),
                                var.data());
  ref::batchnorm_backward(d, src.data(), r.data(), scale.data(), mean.data(), var.data(),
                        diff_src.data(), diff_scale.data(), diff_shift.data());
  const float h = 1e-2f;
  for (size_t i = 0; i < n; ++i) {
    Vec xp = src, xm = src;
    xp[i] += h;
    xm[i] -= h;
    const double fd = (loss(xp, scale, shift) - loss(xm, scale, shift)) / (2 * h);
    EXPECT_NEAR(diff_src[i], fd, 2e-3) << "diff_src " << i;
  }
  for (size_t c = 0; c < 2; ++c) {
    Vec gp = scale, gm = scale, bp = shift, bm = shift;
    gp[c] += h;
    gm[c] -= h;
    bp[c] += h;
    bm[c] -= h;
    EXPECT_NEAR(diff_scale[c], (loss(src, gp, shift) - loss(src, gm, shift)) / (2 * h), 2e-3);
    EXPECT_NEAR(diff_shift[c], (loss(src, scale, bp) - loss(src, scale, bm)) / (2 * h), 2e-3);
  }
}

TEST(RefBackend, ReluSigmoid) {
  EltwiseDesc relu = EltwiseDesc::parse("eltwise:relu_n4");
  Vec src{-2, -0.0f, 0.5f, 3}, dst(4), diff_dst{1, 2, 3, 4}, diff_src(4);
  ref::eltwise_forward(relu, src.data(), dst.data());
  expect_near_all(dst, {0, 0, 0.5f, 3}, 0, relu.str());
  ref::eltwise_backward(relu, src.data(), dst.data(), diff_dst.data(), diff_src.data());
  expect_near_all(diff_src, {0, 0, 3, 4}, 0, relu.str());

  EltwiseDesc sig = EltwiseDesc::parse("eltwise:sigmoid_n4");
  ref::eltwise_forward(sig, src.data(), dst.data());
  Vec want(4), want_diff(4);
  for (int i = 0; i < 4; ++i) {
    want[i] = 1.0f / (1.0f + std::exp(-src[i]));
    want_diff[i] = diff_dst[i] * want[i] * (1 - want[i]);
  }
  expect_near_all(dst, want, 1e-6f, sig.str());
  EXPECT_NEAR(dst[1], 0.5f, 1e-7f);
  ref::eltwise_backward(sig, src.data(), dst.data(), diff_dst.data(), diff_src.data());
  expect_near_all(diff_src, want_diff, 1e-6f, sig.str());
  EXPECT_NEAR(diff_src[1], 0.5f, 1e-7f);  // 2 * 0.5 * 0.5
}

TEST(RefBackend, SoftmaxCrossEntropy) {
  Vec logits{0, 0, 1, 2, 3, 1000}, probs(6), diff(6);
  // Sample 0: two classes... use 3 classes: rows {0,0,1} and {2,3,1000}.
  std::vector<int32_t> labels{2, 0};
  const float loss = ref::softmax_xent_forward(2, 3, logits.data(), labels.data(), probs.data());
  const double e = std::exp(1.0), z0 = 2 + e;
  const double loss0 = -std::log(e / z0), loss1 = 998.0;  // -log softmax: 1000 - 2, no overflow
  EXPECT_NEAR(loss, (loss0 + loss1) / 2, 1e-3);
  expect_near_all(probs, {float(1 / z0), float(1 / z0), float(e / z0), 0, 0, 1}, 1e-6f, "probs");
  ref::softmax_xent_backward(2, 3, probs.data(), labels.data(), diff.data());
  expect_near_all(diff,
                  {float(1 / z0 / 2), float(1 / z0 / 2), float((e / z0 - 1) / 2), -0.5f, 0, 0.5f},
                  1e-6f, "diff_logits");
  std::vector<int32_t> bad{3, 0};
  EXPECT_THROW(ref::softmax_xent_forward(2, 3, logits.data(), bad.data(), probs.data()),
               RuntimeError);
}

TEST(RefBackend, MeanSquaredError) {
  Vec pred{1, 2, 0.5f, 0}, target{0, 0, 0.5f, 1}, diff(4);
  EXPECT_NEAR(ref::mse_forward(4, pred.data(), target.data()), (1 + 4 + 0 + 1) / 4.0f, 1e-6f);
  ref::mse_backward(4, pred.data(), target.data(), diff.data());
  expect_near_all(diff, {0.5f, 1, 0, -0.5f}, 1e-6f, "mse");
}

TEST(RefBackend, AddConcatDropout) {
  Vec a{1, 2, 3}, b{10, 20, 30}, sum(3);
  ref::add(3, a.data(), b.data(), sum.data());
  expect_near_all(sum, {11, 22, 33}, 0, "add");

  // mb 2, hw 2: x (2,1,2) and y (2,2,2) -> (2,3,2)
  Vec x{1, 2, 3, 4}, y{10, 11, 12, 13, 20, 21, 22, 23}, cat(12);
  ref::concat_forward(2, 2, {1, 2}, {x.data(), y.data()}, cat.data());
  expect_near_all(cat, {1, 2, 10, 11, 12, 13, 3, 4, 20, 21, 22, 23}, 0, "concat");
  Vec dx(4), dy(8);
  ref::concat_backward(2, 2, {1, 2}, cat.data(), {dx.data(), dy.data()});
  expect_near_all(dx, x, 0, "concat backward x");
  expect_near_all(dy, y, 0, "concat backward y");

  std::vector<uint8_t> mask{1, 0, 1};
  Vec drop(3);
  ref::dropout_apply(3, mask.data(), 2.0f, a.data(), drop.data());
  expect_near_all(drop, {2, 0, 6}, 0, "dropout");
}

TEST(RefBackend, SgdMomentumNesterovWeightDecay) {
  // g' = 0.5 + 0.01 * 1 = 0.51; v = 0.9 * 0.1 + 0.51 = 0.6
  Vec w{1}, g{0.5f}, v{0.1f};
  ref::sgd_step(1, 0.1f, 0.9f, 0.01f, false, w.data(), g.data(), v.data());
  EXPECT_NEAR(v[0], 0.6f, 1e-6f);
  EXPECT_NEAR(w[0], 1 - 0.06f, 1e-6f);
  // Nesterov: w -= lr (g' + m v) = 0.1 (0.51 + 0.54)
  Vec wn{1}, vn{0.1f};
  ref::sgd_step(1, 0.1f, 0.9f, 0.01f, true, wn.data(), g.data(), vn.data());
  EXPECT_NEAR(vn[0], 0.6f, 1e-6f);
  EXPECT_NEAR(wn[0], 1 - 0.105f, 1e-6f);
  // Plain SGD: no momentum, no decay.
  Vec wp{1, -1}, gp{0.5f, 0.25f}, vp{0, 0};
  ref::sgd_step(2, 0.2f, 0.0f, 0.0f, false, wp.data(), gp.data(), vp.data());
  expect_near_all(wp, {0.9f, -1.05f}, 1e-6f, "sgd");
}

// The ref backend's table: planned ops run the kernels on plain tensors, memory is zeroed host
// memory, and a desc that is not plain f32 is refused at plan time, naming it.
TEST(RefBackend, PlannedOpsMemoryAndDescChecks) {
  RefBackend be;
  const ConvDesc d = ConvDesc::parse("conv:mb2_ic3oc4_ih5iw5_kh3kw3_sh1sw1_ph1pw1_g1");
  const TensorDesc src_desc = TensorDesc::plain(Shape{2, 3, 5, 5});
  auto op = be.plan_conv(d, src_desc, TensorDesc::any(Shape{2, 4, 5, 5}));
  EXPECT_EQ(op->dst_desc(), TensorDesc::plain(Shape{2, 4, 5, 5}));
  Vec src(2 * 3 * 25), wei(4 * 3 * 9), bia(4), want(2 * 4 * 25);
  for (size_t i = 0; i < src.size(); ++i) src[i] = std::sin(0.3f * float(i));
  for (size_t i = 0; i < wei.size(); ++i) wei[i] = std::cos(0.7f * float(i));
  bia = {0.1f, -0.2f, 0.3f, 0.0f};
  DeviceBuffer dst = be.allocate(op->dst_desc().bytes);
  for (size_t i = 0; i < dst.bytes() / 4; ++i) ASSERT_EQ(dst.f32()[i], 0.0f) << "allocate zeroes";
  op->forward(Tensor(src.data(), src_desc), wei.data(), bia.data(), Tensor(dst.data(), op->dst_desc()));
  ref::conv_forward(d, src.data(), wei.data(), bia.data(), want.data());
  expect_near_all(Vec(dst.f32(), dst.f32() + want.size()), want, 0, "planned conv forward");

  TensorDesc blocked = src_desc;
  blocked.layout = 3;  // a layout id some other backend planned
  EXPECT_THROW(be.plan_conv(d, blocked, TensorDesc::any(Shape{2, 4, 5, 5})), ConfigError);
  TensorDesc half = TensorDesc::plain(Shape{2, 3, 5, 5}, DType::bf16);
  try {
    be.plan_conv(d, half, TensorDesc::any(Shape{2, 4, 5, 5}));
    ADD_FAILURE() << "bf16 accepted";
  } catch (const ConfigError& e) {
    EXPECT_NE(std::string(e.what()).find("bf16"), std::string::npos) << e.what();
  }

  Vec y{1, 2}, x{10, 20};
  be.axpby(2, 0.5f, x.data(), 2.0f, y.data());  // y = 0.5 x + 2 y
  expect_near_all(y, {7, 14}, 0, "axpby");
}

// A concat input that needs no gradient is skipped in backward (a null diff target).
TEST(RefBackend, ConcatBackwardSkipsInputsWithoutGradient) {
  Vec cat{1, 2, 10, 11, 12, 13, 3, 4, 20, 21, 22, 23}, dy(8);
  ref::concat_backward(2, 2, {1, 2}, cat.data(), {nullptr, dy.data()});
  expect_near_all(dy, {10, 11, 12, 13, 20, 21, 22, 23}, 0, "concat backward y");
}

}  // namespace
}  // namespace ts
