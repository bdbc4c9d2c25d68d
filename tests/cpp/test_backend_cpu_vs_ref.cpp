// Every op of the oneDNN cpu backend against the reference backend over many shapes (strides,
// padding, odd sizes, batch 1, groups incl. depthwise, bias on/off, kernels 1/3/5), on random
// inputs. Outputs are pre-filled with NaN so an element the backend forgets to write fails.
#include <gtest/gtest.h>

#include <algorithm>
#include <cmath>
#include <limits>
#include <regex>
#include <string>
#include <vector>

#include "backend/backend.h"
#include "backend/backend_factory.h"
#include "backend/cpu/cpu_backend.h"
#include "backend/cpu/cpu_info.h"
#include "backend/ref/ref_kernels.h"
#include "core/error.h"
#include "core/rng.h"
#include "plain_ops.h"

namespace ts {
namespace {

using Vec = std::vector<float>;
constexpr double kRtol = 1e-4;

Vec random_vec(size_t n, uint64_t seed, float lo = -1.0f, float hi = 1.0f) {
  Rng rng(seed);
  Vec v(n);
  for (auto& x : v) x = lo + (hi - lo) * static_cast<float>(rng.uniform());
  return v;
}
Vec nan_vec(size_t n) { return Vec(n, std::numeric_limits<float>::quiet_NaN()); }

// |got - want| <= rtol * (|want| + max|want|): relative to the tensor's scale, so sums with
// cancellation are not held to a tighter bound than their inputs allow.
void expect_close(const Vec& got, const Vec& want, const std::string& what, double rtol = kRtol) {
  ASSERT_EQ(got.size(), want.size()) << what;
  double scale = 0.0;
  for (float w : want) scale = std::max(scale, double(std::fabs(w)));
  size_t bad = 0;
  for (size_t i = 0; i < got.size(); ++i) {
    const double tol = rtol * (std::fabs(want[i]) + scale) + 1e-7;
    if (!(std::fabs(double(got[i]) - double(want[i])) <= tol)) {
      if (++bad <= 5)
        ADD_FAILURE() << what << ": element " << i << " cpu " << got[i] << " ref " << want[i]
                      << " (tol " << tol << ")";
    }
  }
  EXPECT_EQ(bad, 0u) << what << ": " << bad << " of " << got.size() << " elements differ";
}

class CpuVsRef {
 protected:
  CpuBackend cpu;
};

// ---- convolution ----------------------------------------------------------------------------
class ConvCpuVsRef : public CpuVsRef, public ::testing::TestWithParam<const char*> {};

TEST_P(ConvCpuVsRef, ForwardBackwardDataBackwardWeights) {
  const ConvDesc d = ConvDesc::parse(GetParam());
  const std::string name = d.str();
  SCOPED_TRACE(name);
  const size_t n_src = d.mb * d.ic * d.ih * d.iw, n_dst = d.mb * d.oc * d.oh() * d.ow();
  const size_t n_wei = d.weight_count();
  const Vec wei = random_vec(n_wei, 2), bia = random_vec(d.oc, 3);
  const float* bia_ptr = d.bias ? bia.data() : nullptr;
  // Twice with different data: the cached plan must bind the new pointers.
  for (uint64_t round = 0; round < 2; ++round) {
    const Vec src = random_vec(n_src, 10 + round);
    Vec dst_cpu = nan_vec(n_dst), dst_ref(n_dst);
    plain::conv_forward(cpu, d, src.data(), wei.data(), bia_ptr, dst_cpu.data());
    ref::conv_forward(d, src.data(), wei.data(), bia_ptr, dst_ref.data());
    expect_close(dst_cpu, dst_ref, name + " forward round " + std::to_string(round));
  }
  const Vec src = random_vec(n_src, 20), diff_dst = random_vec(n_dst, 21);
  Vec diff_src_cpu = nan_vec(n_src), diff_src_ref(n_src);
  Vec diff_wei_cpu = nan_vec(n_wei), diff_wei_ref(n_wei);
  Vec diff_bia_cpu = nan_vec(d.oc), diff_bia_ref(d.oc);
  plain::conv_backward(cpu, d, src.data(), diff_dst.data(), wei.data(), diff_src_cpu.data(), diff_wei_cpu.data(),
                       d.bias ? diff_bia_cpu.data() : nullptr);
  ref::conv_backward_data(d, diff_dst.data(), wei.data(), diff_src_ref.data());
  expect_close(diff_src_cpu, diff_src_ref, name + " backward_data");
  ref::conv_backward_weights(d, src.data(), diff_dst.data(), diff_wei_ref.data(),
                            d.bias ? diff_bia_ref.data() : nullptr);
  expect_close(diff_wei_cpu, diff_wei_ref, name + " backward_weights");
  if (d.bias) expect_close(diff_bia_cpu, diff_bia_ref, name + " backward_bias");
}

INSTANTIATE_TEST_SUITE_P(
    Shapes, ConvCpuVsRef,
    ::testing::Values("conv:mb2_ic3oc4_ih7iw5_kh3kw3_sh1sw1_ph1pw1_g1",
                      "conv:mb1_ic4oc6_ih9iw9_kh3kw3_sh2sw2_ph0pw0_g2_nobias",
                      "conv:mb2_ic4oc4_ih8iw8_kh3kw3_sh1sw1_ph1pw1_g4",
                      "conv:mb1_ic6oc6_ih7iw5_kh3kw3_sh2sw2_ph1pw1_g6_nobias",
                      "conv:mb3_ic2oc5_ih6iw7_kh5kw5_sh1sw1_ph2pw2_g1",
                      "conv:mb2_ic3oc8_ih11iw9_kh5kw5_sh2sw2_ph2pw1_g1",
                      "conv:mb1_ic8oc16_ih5iw5_kh1kw1_sh1sw1_ph0pw0_g1_nobias",
                      "conv:mb2_ic8oc4_ih7iw7_kh1kw1_sh2sw2_ph0pw0_g1",
                      "conv:mb2_ic4oc8_ih8iw8_kh3kw3_sh2sw2_ph0pw0_g2",
                      "conv:mb1_ic2oc2_ih6iw8_kh3kw1_sh2sw1_ph1pw0_g1",
                      "conv:mb2_ic1oc8_ih28iw28_kh5kw5_sh1sw1_ph2pw2_g1",
                      "conv:mb2_ic16oc32_ih14iw14_kh5kw5_sh1sw1_ph2pw2_g1"));

// ---- pooling --------------------------------------------------------------------------------
class PoolCpuVsRef : public CpuVsRef, public ::testing::TestWithParam<const char*> {};

TEST_P(PoolCpuVsRef, ForwardBackward) {
  const PoolDesc d = PoolDesc::parse(GetParam());
  const std::string name = d.str();
  SCOPED_TRACE(name);
  const size_t n_src = d.mb * d.c * d.ih * d.iw, n_dst = d.mb * d.c * d.oh() * d.ow();
  plain::Pool pool(cpu, d);
  if (d.kind == PoolKind::avg) EXPECT_EQ(pool.workspace_bytes(), 0u) << name;
  if (d.kind == PoolKind::max) EXPECT_GT(pool.workspace_bytes(), 0u) << name;
  std::vector<unsigned char> ws_ref(ref::pool_workspace_bytes(d) + 1);
  const Vec src = random_vec(n_src, 30), diff_dst = random_vec(n_dst, 31);
  Vec dst_cpu = nan_vec(n_dst), dst_ref(n_dst);
  pool.forward(src.data(), dst_cpu.data());
  ref::pool_forward(d, src.data(), dst_ref.data(), ws_ref.data());
  expect_close(dst_cpu, dst_ref, name + " forward");
  Vec diff_src_cpu = nan_vec(n_src), diff_src_ref(n_src);
  pool.backward(diff_dst.data(), diff_src_cpu.data());
  ref::pool_backward(d, diff_dst.data(), ws_ref.data(), diff_src_ref.data());
  expect_close(diff_src_cpu, diff_src_ref, name + " backward");
}

INSTANTIATE_TEST_SUITE_P(Shapes, PoolCpuVsRef,
                         ::testing::Values("pool:max_mb2c3_ih8iw8_kh2kw2_sh2sw2_ph0pw0",
                                           "pool:max_mb1c2_ih7iw5_kh3kw3_sh2sw2_ph1pw1",
                                           "pool:max_mb2c2_ih5iw5_kh3kw3_sh1sw1_ph1pw1",
                                           "pool:max_mb1c3_ih9iw9_kh3kw3_sh2sw2_ph0pw0",
                                           "pool:max_mb2c4_ih28iw28_kh2kw2_sh2sw2_ph0pw0",
                                           "pool:avg_mb2c3_ih7iw5_kh3kw3_sh2sw2_ph1pw1",
                                           "pool:avg_mb1c4_ih8iw8_kh2kw2_sh2sw2_ph0pw0",
                                           "pool:avg_mb2c2_ih5iw6_kh3kw3_sh1sw1_ph1pw1",
                                           "pool:avg_mb1c2_ih6iw6_kh6kw6_sh1sw1_ph0pw0"));

// ---- fully connected ------------------------------------------------------------------------
class FcCpuVsRef : public CpuVsRef, public ::testing::TestWithParam<const char*> {};

TEST_P(FcCpuVsRef, ForwardBackward) {
  const FcDesc d = FcDesc::parse(GetParam());
  const std::string name = d.str();
  SCOPED_TRACE(name);
  const size_t n_src = d.mb * d.ic, n_dst = d.mb * d.oc, n_wei = d.oc * d.ic;
  const Vec src = random_vec(n_src, 40), wei = random_vec(n_wei, 41), bia = random_vec(d.oc, 42);
  const Vec diff_dst = random_vec(n_dst, 43);
  const float* bia_ptr = d.bias ? bia.data() : nullptr;
  Vec dst_cpu = nan_vec(n_dst), dst_ref(n_dst);
  plain::fc_forward(cpu, d, src.data(), wei.data(), bia_ptr, dst_cpu.data());
  ref::fc_forward(d, src.data(), wei.data(), bia_ptr, dst_ref.data());
  expect_close(dst_cpu, dst_ref, name + " forward");
  Vec diff_src_cpu = nan_vec(n_src), diff_src_ref(n_src);
  Vec diff_wei_cpu = nan_vec(n_wei), diff_wei_ref(n_wei);
  Vec diff_bia_cpu = nan_vec(d.oc), diff_bia_ref(d.oc);
  plain::fc_backward(cpu, d, src.data(), diff_dst.data(), wei.data(), diff_src_cpu.data(), diff_wei_cpu.data(),
                     d.bias ? diff_bia_cpu.data() : nullptr);
  ref::fc_backward_data(d, diff_dst.data(), wei.data(), diff_src_ref.data());
  expect_close(diff_src_cpu, diff_src_ref, name + " backward_data");
  ref::fc_backward_weights(d, src.data(), diff_dst.data(), diff_wei_ref.data(),
                          d.bias ? diff_bia_ref.data() : nullptr);
  expect_close(diff_wei_cpu, diff_wei_ref, name + " backward_weights");
  if (d.bias) expect_close(diff_bia_cpu, diff_bia_ref, name + " backward_bias");
}

INSTANTIATE_TEST_SUITE_P(Shapes, FcCpuVsRef,
                         ::testing::Values("fc:mb1_ic5oc3", "fc:mb4_ic37oc10_nobias",
                                           "fc:mb3_ic1oc1", "fc:mb64_ic100oc20",
                                           "fc:mb7_ic3136oc17"));

// ---- batch norm -----------------------------------------------------------------------------
class BnCpuVsRef : public CpuVsRef, public ::testing::TestWithParam<const char*> {};

TEST_P(BnCpuVsRef, TrainingInferenceBackward) {
  const BnDesc d = BnDesc::parse(GetParam());
  const std::string name = d.str();
  SCOPED_TRACE(name);
  const size_t n = d.mb * d.c * d.h * d.w, c = d.c;
  const Vec src = random_vec(n, 50, -0.5f, 1.5f), diff_dst = random_vec(n, 51);
  const Vec scale = random_vec(c, 52, 0.5f, 1.5f), shift = random_vec(c, 53);
  Vec dst_cpu = nan_vec(n), dst_ref(n), mean_cpu = nan_vec(c), mean_ref(c), var_cpu = nan_vec(c),
      var_ref(c);
  plain::batchnorm_forward_training(cpu, d, src.data(), scale.data(), shift.data(), dst_cpu.data(),
                                 mean_cpu.data(), var_cpu.data());
  ref::batchnorm_forward_training(d, src.data(), scale.data(), shift.data(), dst_ref.data(),
                                 mean_ref.data(), var_ref.data());
  expect_close(mean_cpu, mean_ref, name + " mean");
  expect_close(var_cpu, var_ref, name + " variance");
  expect_close(dst_cpu, dst_ref, name + " forward_training");

  const Vec run_mean = random_vec(c, 54), run_var = random_vec(c, 55, 0.2f, 2.0f);
  Vec inf_cpu = nan_vec(n), inf_ref(n);
  plain::batchnorm_forward_inference(cpu, d, src.data(), scale.data(), shift.data(), run_mean.data(),
                                  run_var.data(), inf_cpu.data());
  ref::batchnorm_forward_inference(d, src.data(), scale.data(), shift.data(), run_mean.data(),
                                  run_var.data(), inf_ref.data());
  expect_close(inf_cpu, inf_ref, name + " forward_inference");

  Vec dsrc_cpu = nan_vec(n), dsrc_ref(n), dscale_cpu = nan_vec(c), dscale_ref(c),
      dshift_cpu = nan_vec(c), dshift_ref(c);
  plain::batchnorm_backward(cpu, d, src.data(), diff_dst.data(), scale.data(), mean_ref.data(),
                         var_ref.data(), dsrc_cpu.data(), dscale_cpu.data(), dshift_cpu.data());
  ref::batchnorm_backward(d, src.data(), diff_dst.data(), scale.data(), mean_ref.data(),
                         var_ref.data(), dsrc_ref.data(), dscale_ref.data(), dshift_ref.data());
  expect_close(dsrc_cpu, dsrc_ref, name + " backward diff_src", 1e-3);  // a difference of sums
  expect_close(dscale_cpu, dscale_ref, name + " backward diff_scale");
  expect_close(dshift_cpu, dshift_ref, name + " backward diff_shift");
}

INSTANTIATE_TEST_SUITE_P(Shapes, BnCpuVsRef,
                         ::testing::Values("bn:mb2c3_h5w7", "bn:mb1c8_h3w3", "bn:mb4c2_h1w1",
                                           "bn:mb3c5_h7w5_eps0.001", "bn:mb8c16_h8w8"));

// ---- activations ----------------------------------------------------------------------------
class EltwiseCpuVsRef : public CpuVsRef, public ::testing::TestWithParam<const char*> {};

TEST_P(EltwiseCpuVsRef, ForwardBackward) {
  const EltwiseDesc d = EltwiseDesc::parse(GetParam());
  const std::string name = d.str();
  SCOPED_TRACE(name);
  const size_t n = d.n;
  const Vec src = random_vec(n, 60, -4.0f, 4.0f), diff_dst = random_vec(n, 61);
  Vec dst_cpu = nan_vec(n), dst_ref(n);
  plain::eltwise_forward(cpu, d, src.data(), dst_cpu.data());
  ref::eltwise_forward(d, src.data(), dst_ref.data());
  expect_close(dst_cpu, dst_ref, name + " forward");
  Vec diff_src_cpu = nan_vec(n), diff_src_ref(n);
  plain::eltwise_backward(cpu, d, src.data(), dst_ref.data(), diff_dst.data(), diff_src_cpu.data());
  ref::eltwise_backward(d, src.data(), dst_ref.data(), diff_dst.data(), diff_src_ref.data());
  expect_close(diff_src_cpu, diff_src_ref, name + " backward");
}

INSTANTIATE_TEST_SUITE_P(Shapes, EltwiseCpuVsRef,
                         ::testing::Values("eltwise:relu_n1", "eltwise:relu_n7",
                                           "eltwise:relu_n4097", "eltwise:relu6_n1", "eltwise:relu6_n4097",
                                           "eltwise:sigmoid_n1",
                                           "eltwise:sigmoid_n13", "eltwise:sigmoid_n4097"));

// ---- losses ---------------------------------------------------------------------------------
class SoftmaxCpuVsRef : public CpuVsRef,
                        public ::testing::TestWithParam<std::pair<int64_t, int64_t>> {};

TEST_P(SoftmaxCpuVsRef, ForwardBackward) {
  const auto [mb, classes] = GetParam();
  const std::string name = "softmax_xent mb" + std::to_string(mb) + " classes" +
                           std::to_string(classes);
  SCOPED_TRACE(name);
  const size_t n = mb * classes;
  const Vec logits = random_vec(n, 70, -5.0f, 5.0f);
  std::vector<int32_t> labels(mb);
  Rng rng(71);
  for (auto& l : labels) l = static_cast<int32_t>(rng.below(classes));
  Vec probs_cpu = nan_vec(n), probs_ref(n);
  const float loss_cpu = plain::softmax_xent_forward(cpu, mb, classes, logits.data(), labels.data(),
                                                  probs_cpu.data());
  const float loss_ref = ref::softmax_xent_forward(mb, classes, logits.data(), labels.data(),
                                                  probs_ref.data());
  EXPECT_NEAR(loss_cpu, loss_ref, kRtol * std::fabs(loss_ref) + 1e-6) << name;
  expect_close(probs_cpu, probs_ref, name + " probs");
  Vec diff_cpu = nan_vec(n), diff_ref(n);
  plain::softmax_xent_backward(cpu, mb, classes, probs_ref.data(), labels.data(), diff_cpu.data());
  ref::softmax_xent_backward(mb, classes, probs_ref.data(), labels.data(), diff_ref.data());
  expect_close(diff_cpu, diff_ref, name + " diff_logits");
}

INSTANTIATE_TEST_SUITE_P(Shapes, SoftmaxCpuVsRef,
                         ::testing::Values(std::make_pair(1, 10), std::make_pair(5, 3),
                                           std::make_pair(64, 10), std::make_pair(3, 1000)));

// Labels are checked by the loss layer on the host before they reach a backend
// (test_net.cpp: Net.LabelOutOfRangeIsARuntimeError).
TEST(CpuVsRefLosses, SoftmaxLargeLogits) {
  CpuBackend cpu;
  Vec logits{0, 0, 1000}, probs(3);
  std::vector<int32_t> label{0};
  EXPECT_NEAR(plain::softmax_xent_forward(cpu, 1, 3, logits.data(), label.data(), probs.data()), 1000.0f,
              1e-2f);  // finite although probs[0] underflows to 0
}

TEST(CpuVsRefLosses, MeanSquaredError) {
  CpuBackend cpu;
  for (int64_t n : {1, 7, 10000}) {
    SCOPED_TRACE("mse n" + std::to_string(n));
    const Vec pred = random_vec(n, 80), target = random_vec(n, 81);
    const float l_cpu = plain::mse_forward(cpu, n, pred.data(), target.data());
    const float l_ref = ref::mse_forward(n, pred.data(), target.data());
    EXPECT_NEAR(l_cpu, l_ref, kRtol * l_ref);
    Vec d_cpu = nan_vec(n), d_ref(n);
    plain::mse_backward(cpu, n, pred.data(), target.data(), d_cpu.data());
    ref::mse_backward(n, pred.data(), target.data(), d_ref.data());
    expect_close(d_cpu, d_ref, "mse_backward n" + std::to_string(n));
  }
}

// ---- plumbing and the optimizer -------------------------------------------------------------
TEST(CpuVsRefPlumbing, Add) {
  CpuBackend cpu;
  for (int64_t n : {1, 5, 12345}) {
    const Vec a = random_vec(n, 90), b = random_vec(n, 91);
    Vec d_cpu = nan_vec(n), d_ref(n);
    plain::add(cpu, n, a.data(), b.data(), d_cpu.data());
    ref::add(n, a.data(), b.data(), d_ref.data());
    expect_close(d_cpu, d_ref, "add n" + std::to_string(n), 1e-7);
  }
}

TEST(CpuVsRefPlumbing, ConcatForwardBackward) {
  CpuBackend cpu;
  struct Case { int64_t mb, hw; std::vector<int64_t> channels; };
  for (const Case& c : {Case{2, 7, {3, 5, 2}}, Case{1, 1, {4, 1}}, Case{3, 49, {16, 8, 8, 1}}}) {
    int64_t total = 0;
    std::vector<Vec> inputs;
    std::vector<const float*> srcs;
    for (size_t i = 0; i < c.channels.size(); ++i) {
      inputs.push_back(random_vec(c.mb * c.channels[i] * c.hw, 100 + i));
      total += c.channels[i];
    }
    for (auto& v : inputs) srcs.push_back(v.data());
    const std::string name = "concat mb" + std::to_string(c.mb) + " hw" + std::to_string(c.hw) +
                             " parts" + std::to_string(c.channels.size());
    const size_t n = c.mb * total * c.hw;
    Vec d_cpu = nan_vec(n), d_ref(n);
    plain::concat_forward(cpu, c.mb, c.hw, c.channels, srcs, d_cpu.data());
    ref::concat_forward(c.mb, c.hw, c.channels, srcs, d_ref.data());
    expect_close(d_cpu, d_ref, name + " forward", 0);

    const Vec diff_dst = random_vec(n, 110);
    std::vector<Vec> g_cpu, g_ref;
    std::vector<float*> p_cpu, p_ref;
    for (auto& v : inputs) {
      g_cpu.push_back(nan_vec(v.size()));
      g_ref.push_back(Vec(v.size()));
    }
    for (size_t i = 0; i < inputs.size(); ++i) {
      p_cpu.push_back(g_cpu[i].data());
      p_ref.push_back(g_ref[i].data());
    }
    plain::concat_backward(cpu, c.mb, c.hw, c.channels, diff_dst.data(), p_cpu);
    ref::concat_backward(c.mb, c.hw, c.channels, diff_dst.data(), p_ref);
    for (size_t i = 0; i < inputs.size(); ++i)
      expect_close(g_cpu[i], g_ref[i], name + " backward part " + std::to_string(i), 0);
  }
}

TEST(CpuVsRefPlumbing, Dropout) {
  CpuBackend cpu;
  const int64_t n = 1001;
  const Vec src = random_vec(n, 120);
  std::vector<uint8_t> mask(n);
  Rng rng(121);
  for (auto& m : mask) m = rng.uniform() < 0.5 ? 1 : 0;
  Vec d_cpu = nan_vec(n), d_ref(n);
  plain::dropout_apply(cpu, n, mask.data(), 2.0f, src.data(), d_cpu.data());
  ref::dropout_apply(n, mask.data(), 2.0f, src.data(), d_ref.data());
  expect_close(d_cpu, d_ref, "dropout n1001", 1e-7);
}

TEST(CpuVsRefPlumbing, SgdVariants) {
  CpuBackend cpu;
  const int64_t n = 777;
  struct Case { float lr, momentum, wd; bool nesterov; };
  for (const Case& c : {Case{0.1f, 0.0f, 0.0f, false}, Case{0.05f, 0.9f, 5e-4f, false},
                        Case{0.05f, 0.9f, 5e-4f, true}}) {
    const std::string name = "sgd lr" + std::to_string(c.lr) + " m" + std::to_string(c.momentum) +
                             " wd" + std::to_string(c.wd) + (c.nesterov ? " nesterov" : "");
    Vec w_cpu = random_vec(n, 130), w_ref = w_cpu, v_cpu = random_vec(n, 131), v_ref = v_cpu;
    for (int step = 0; step < 3; ++step) {
      const Vec g = random_vec(n, 140 + step);
      cpu.sgd_step(n, c.lr, c.momentum, c.wd, c.nesterov, w_cpu.data(), g.data(), v_cpu.data());
      ref::sgd_step(n, c.lr, c.momentum, c.wd, c.nesterov, w_ref.data(), g.data(), v_ref.data());
    }
    expect_close(w_cpu, w_ref, name + " weights", 1e-5);
    expect_close(v_cpu, v_ref, name + " velocity", 1e-5);
  }
}

// ---- the backend as a whole -----------------------------------------------------------------
TEST(CpuBackendInfo, FactorySupportsAndLibraryFacts) {
  auto be = make_backend("cpu");
  EXPECT_EQ(be->name(), "cpu");
  EXPECT_TRUE(be->supports(Op::conv, Precision::fp32));
  EXPECT_FALSE(be->supports(Op::conv, Precision::fp16));
  be->set_threads(1);
  be->set_threads(2);
  EXPECT_THROW(be->set_threads(0), RuntimeError);
  const auto names = available_backends();
  EXPECT_NE(std::find(names.begin(), names.end(), "cpu"), names.end());
  try {
    make_backend("gpu");
    ADD_FAILURE() << "make_backend(\"gpu\") did not throw";
  } catch (const ConfigError& e) {
    EXPECT_NE(std::string(e.what()).find("ref, cpu"), std::string::npos) << e.what();
  }
  EXPECT_TRUE(std::regex_match(onednn_version(), std::regex(R"(\d+\.\d+\.\d+)")))
      << onednn_version();
  EXPECT_NE(onednn_isa(), "unknown");
  EXPECT_FALSE(onednn_isa().empty());
  if (onednn_bf16_native()) EXPECT_NE(onednn_isa().find("avx512_core_"), std::string::npos);
}

// A oneDNN rejection becomes a RuntimeError that names the op and its descriptor.
TEST(CpuBackendInfo, OneDnnErrorsNameTheDescriptor) {
  CpuBackend cpu;
  ConvDesc d;  // ic 3 with 2 groups: no valid weights layout (parse would reject this text)
  d.mb = 1; d.ic = 3; d.oc = 2; d.ih = 4; d.iw = 4; d.kh = 1; d.kw = 1; d.groups = 2;
  Vec src(48), wei(2), bia(2), dst(32);
  try {
    plain::conv_forward(cpu, d, src.data(), wei.data(), bia.data(), dst.data());
    ADD_FAILURE() << "oneDNN accepted " << d.str();
  } catch (const RuntimeError& e) {
    const std::string msg = e.what();
    EXPECT_NE(msg.find(d.str()), std::string::npos) << msg;
    EXPECT_NE(msg.find("cpu_conv.cpp:"), std::string::npos) << msg;
  }
}

}  // namespace
}  // namespace ts
