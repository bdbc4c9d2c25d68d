// The cpu backend's fast paths against the reference: fused ops (conv + bias + ReLU, batch
// norm + ReLU, add + ReLU), bf16 mixed precision for every op, whole nets (lenet, resnet20) run
// in oneDNN's blocked layouts with fusion against ref, fusion on vs off, and the number of
// reorders per training step. Outputs are pre-filled with NaN so an element a backend forgets
// to write fails.
#include <gtest/gtest.h>

#include <algorithm>
#include <cmath>
#include <limits>
#include <memory>
#include <string>
#include <vector>

#include "backend/backend.h"
#include "backend/cpu/cpu_backend.h"
#include "backend/ref/ref_backend.h"
#include "backend/ref/ref_kernels.h"
#include "core/error.h"
#include "core/rng.h"
#include "plain_ops.h"
#include "nn/layers.h"
#include "nn/models.h"
#include "nn/net.h"
#include "nn/optimizer.h"

namespace ts {
namespace {

using Vec = std::vector<float>;
constexpr double kRtolF32 = 1e-4;
// bf16 keeps 8 significant bits (relative rounding 2^-9 per value). Products of two rounded
// inputs summed over a reduction of length K err by about 2^-8.5 * sqrt(K) * |x||w|, while the
// tensor's scale grows like sqrt(K) |x||w| too; tolerances are relative to the tensor's scale
// (expect_close), so 2e-2 covers any K here with margin, and outputs stored as bf16 add 2^-9.
constexpr double kRtolBf16 = 2e-2;

Vec random_vec(size_t n, uint64_t seed, float lo = -1.0f, float hi = 1.0f) {
  Rng rng(seed);
  Vec v(n);
  for (auto& x : v) x = lo + (hi - lo) * static_cast<float>(rng.uniform());
  return v;
}
Vec nan_vec(size_t n) { return Vec(n, std::numeric_limits<float>::quiet_NaN()); }

// |got - want| <= rtol * (|want| + max|want|) + atol.
void expect_close(const Vec& got, const Vec& want, const std::string& what, double rtol,
                  double atol = 1e-7) {
  ASSERT_EQ(got.size(), want.size()) << what;
  double scale = 0.0;
  for (float w : want) scale = std::max(scale, double(std::fabs(w)));
  size_t bad = 0;
  for (size_t i = 0; i < got.size(); ++i) {
    const double tol = rtol * (std::fabs(want[i]) + scale) + atol;
    if (!(std::fabs(double(got[i]) - double(want[i])) <= tol) && ++bad <= 5)
      ADD_FAILURE() << what << ": element " << i << " cpu " << got[i] << " ref " << want[i]
                    << " (tol " << tol << ")";
  }
  EXPECT_EQ(bad, 0u) << what << ": " << bad << " of " << got.size() << " elements differ";
}

struct Case {
  Precision precision;
  double rtol;
};
std::string case_name(const ::testing::TestParamInfo<Case>& info) {
  return precision_name(info.param.precision);
}
const Case kCases[] = {{Precision::fp32, kRtolF32}, {Precision::bf16, kRtolBf16}};

class CpuOps : public ::testing::TestWithParam<Case> {
 protected:
  void SetUp() override { cpu.set_precision(GetParam().precision); }
  double rtol() const { return GetParam().rtol; }
  CpuBackend cpu;
};

// ---- convolution, plain and with the fused ReLU -------------------------------------------
TEST_P(CpuOps, ConvolutionWithAndWithoutFusedRelu) {
  for (const char* text : {"conv:mb2_ic3oc16_ih9iw9_kh3kw3_sh1sw1_ph1pw1_g1",
                           "conv:mb2_ic3oc16_ih9iw9_kh3kw3_sh1sw1_ph1pw1_g1_relu",
                           "conv:mb2_ic16oc32_ih8iw8_kh3kw3_sh2sw2_ph1pw1_g1_nobias_relu",
                           "conv:mb3_ic32oc32_ih6iw6_kh1kw1_sh1sw1_ph0pw0_g32_relu",
                           "conv:mb2_ic1oc8_ih12iw12_kh5kw5_sh1sw1_ph2pw2_g1_relu"}) {
    SCOPED_TRACE(text);
    const ConvDesc d = ConvDesc::parse(text);
    EXPECT_EQ(d.str(), text) << "descriptors with a fused ReLU round-trip";
    const size_t ns = d.mb * d.ic * d.ih * d.iw, nd = d.mb * d.oc * d.oh() * d.ow();
    const Vec src = random_vec(ns, 1), wei = random_vec(d.weight_count(), 2),
              bia = random_vec(d.oc, 3), diff_dst = random_vec(nd, 4);
    Vec dst_c = nan_vec(nd), dst_r = nan_vec(nd);
    plain::conv_forward(cpu, d, src.data(), wei.data(), d.bias ? bia.data() : nullptr, dst_c.data());
    ref::conv_forward(d, src.data(), wei.data(), d.bias ? bia.data() : nullptr, dst_r.data());
    expect_close(dst_c, dst_r, std::string("conv_forward ") + text, rtol());
    if (d.relu)
      for (float v : dst_c) ASSERT_GE(v, 0.0f) << "fused ReLU output must be >= 0";
    Vec dsrc_c = nan_vec(ns), dsrc_r = nan_vec(ns);
    Vec dwei_c = nan_vec(d.weight_count()), dwei_r = nan_vec(d.weight_count());
    Vec dbia_c = nan_vec(d.oc), dbia_r = nan_vec(d.oc);
    plain::conv_backward(cpu, d, src.data(), diff_dst.data(), wei.data(), dsrc_c.data(), dwei_c.data(),
                         d.bias ? dbia_c.data() : nullptr);
    ref::conv_backward_data(d, diff_dst.data(), wei.data(), dsrc_r.data());
    expect_close(dsrc_c, dsrc_r, std::string("conv_backward_data ") + text, rtol());
    ref::conv_backward_weights(d, src.data(), diff_dst.data(), dwei_r.data(),
                              d.bias ? dbia_r.data() : nullptr);
    expect_close(dwei_c, dwei_r, std::string("conv_backward_weights ") + text, rtol());
    if (d.bias) expect_close(dbia_c, dbia_r, std::string("conv diff_bias ") + text, rtol());
  }
}

// ---- batch norm, plain and with the fused ReLU --------------------------------------------
TEST_P(CpuOps, BatchNormWithAndWithoutFusedRelu) {
  for (const char* text : {"bn:mb4c16_h5w5", "bn:mb4c16_h5w5_relu", "bn:mb3c7_h4w4_relu"}) {
    SCOPED_TRACE(text);
    const BnDesc d = BnDesc::parse(text);
    EXPECT_EQ(d.str(), text);
    const size_t n = d.mb * d.c * d.h * d.w;
    const Vec src = random_vec(n, 5, -2.0f, 3.0f), scale = random_vec(d.c, 6, 0.5f, 1.5f),
              shift = random_vec(d.c, 7), diff_dst = random_vec(n, 8);
    Vec dst_c = nan_vec(n), dst_r = nan_vec(n), mean_c = nan_vec(d.c), mean_r = nan_vec(d.c),
        var_c = nan_vec(d.c), var_r = nan_vec(d.c);
    plain::batchnorm_forward_training(cpu, d, src.data(), scale.data(), shift.data(), dst_c.data(),
                                   mean_c.data(), var_c.data());
    ref::batchnorm_forward_training(d, src.data(), scale.data(), shift.data(), dst_r.data(),
                                   mean_r.data(), var_r.data());
    expect_close(dst_c, dst_r, "bn training dst", rtol());
    expect_close(mean_c, mean_r, "bn mean", rtol());
    expect_close(var_c, var_r, "bn variance", rtol());
    Vec inf_c = nan_vec(n), inf_r = nan_vec(n);
    plain::batchnorm_forward_inference(cpu, d, src.data(), scale.data(), shift.data(), mean_r.data(),
                                    var_r.data(), inf_c.data());
    ref::batchnorm_forward_inference(d, src.data(), scale.data(), shift.data(), mean_r.data(),
                                    var_r.data(), inf_r.data());
    expect_close(inf_c, inf_r, "bn inference dst", rtol());
    // Backward of batch norm alone (a fused ReLU's backward is the ReLU layer's).
    Vec dsrc_c = nan_vec(n), dsrc_r = nan_vec(n), dsc_c = nan_vec(d.c), dsc_r = nan_vec(d.c),
        dsh_c = nan_vec(d.c), dsh_r = nan_vec(d.c);
    plain::batchnorm_backward(cpu, d, src.data(), diff_dst.data(), scale.data(), mean_r.data(),
                           var_r.data(), dsrc_c.data(), dsc_c.data(), dsh_c.data());
    ref::batchnorm_backward(d, src.data(), diff_dst.data(), scale.data(), mean_r.data(),
                           var_r.data(), dsrc_r.data(), dsc_r.data(), dsh_r.data());
    expect_close(dsrc_c, dsrc_r, "bn diff_src", rtol());
    expect_close(dsc_c, dsc_r, "bn diff_scale", rtol());
    expect_close(dsh_c, dsh_r, "bn diff_shift", rtol());
  }
}

// ---- pooling, fc, eltwise, add (+ReLU), copy ---------------------------------------------
TEST_P(CpuOps, PoolingFcEltwiseAddCopy) {
  for (const char* text : {"pool:max_mb2c16_ih8iw8_kh2kw2_sh2sw2_ph0pw0",
                           "pool:avg_mb2c5_ih7iw7_kh3kw3_sh2sw2_ph1pw1"}) {
    SCOPED_TRACE(text);
    const PoolDesc d = PoolDesc::parse(text);
    const size_t ns = d.mb * d.c * d.ih * d.iw, nd = d.mb * d.c * d.oh() * d.ow();
    const Vec src = random_vec(ns, 9), diff_dst = random_vec(nd, 10);
    plain::Pool pool(cpu, d);
    std::vector<char> ws_r(ref::pool_workspace_bytes(d) + 1);
    Vec dst_c = nan_vec(nd), dst_r = nan_vec(nd), dsrc_c = nan_vec(ns), dsrc_r = nan_vec(ns);
    pool.forward(src.data(), dst_c.data());
    ref::pool_forward(d, src.data(), dst_r.data(), ws_r.data());
    expect_close(dst_c, dst_r, "pool_forward", rtol());
    pool.backward(diff_dst.data(), dsrc_c.data());
    ref::pool_backward(d, diff_dst.data(), ws_r.data(), dsrc_r.data());
    expect_close(dsrc_c, dsrc_r, "pool_backward", rtol());
  }
  {
    const FcDesc d = FcDesc::parse("fc:mb8_ic300oc20");
    const Vec src = random_vec(d.mb * d.ic, 11), wei = random_vec(d.oc * d.ic, 12),
              bia = random_vec(d.oc, 13), diff_dst = random_vec(d.mb * d.oc, 14);
    Vec dst_c = nan_vec(d.mb * d.oc), dst_r = nan_vec(d.mb * d.oc);
    plain::fc_forward(cpu, d, src.data(), wei.data(), bia.data(), dst_c.data());
    ref::fc_forward(d, src.data(), wei.data(), bia.data(), dst_r.data());
    expect_close(dst_c, dst_r, "fc_forward", rtol());
    Vec dsrc_c = nan_vec(d.mb * d.ic), dsrc_r = nan_vec(d.mb * d.ic);
    Vec dwei_c = nan_vec(d.oc * d.ic), dwei_r = nan_vec(d.oc * d.ic), dbia_c = nan_vec(d.oc),
        dbia_r = nan_vec(d.oc);
    plain::fc_backward(cpu, d, src.data(), diff_dst.data(), wei.data(), dsrc_c.data(), dwei_c.data(), dbia_c.data());
    ref::fc_backward_data(d, diff_dst.data(), wei.data(), dsrc_r.data());
    expect_close(dsrc_c, dsrc_r, "fc_backward_data", rtol());
    ref::fc_backward_weights(d, src.data(), diff_dst.data(), dwei_r.data(), dbia_r.data());
    expect_close(dwei_c, dwei_r, "fc_backward_weights", rtol());
    expect_close(dbia_c, dbia_r, "fc diff_bias", rtol());
  }
  for (EltwiseKind kind : {EltwiseKind::relu, EltwiseKind::relu6, EltwiseKind::sigmoid}) {
    EltwiseDesc d;
    d.kind = kind;
    d.n = 333;
    SCOPED_TRACE(d.str());
    const Vec src = random_vec(d.n, 15, -8.0f, 8.0f), diff_dst = random_vec(d.n, 16);
    Vec dst_c = nan_vec(d.n), dst_r = nan_vec(d.n), dsrc_c = nan_vec(d.n), dsrc_r = nan_vec(d.n);
    plain::eltwise_forward(cpu, d, src.data(), dst_c.data());
    ref::eltwise_forward(d, src.data(), dst_r.data());
    expect_close(dst_c, dst_r, "eltwise_forward", rtol());
    plain::eltwise_backward(cpu, d, src.data(), dst_r.data(), diff_dst.data(), dsrc_c.data());
    ref::eltwise_backward(d, src.data(), dst_r.data(), diff_dst.data(), dsrc_r.data());
    expect_close(dsrc_c, dsrc_r, "eltwise_backward", rtol());
  }
  const Vec a = random_vec(1000, 17), b = random_vec(1000, 18);
  Vec sum_c = nan_vec(1000), sum_r = nan_vec(1000), relu_c = nan_vec(1000), relu_r = nan_vec(1000);
  plain::add(cpu, 1000, a.data(), b.data(), sum_c.data());
  ref::add(1000, a.data(), b.data(), sum_r.data());
  expect_close(sum_c, sum_r, "add", rtol());
  plain::add(cpu, 1000, a.data(), b.data(), relu_c.data(), /*relu=*/true);
  ref::add_relu(1000, a.data(), b.data(), relu_r.data());
  expect_close(relu_c, relu_r, "add_relu", rtol());
  EXPECT_GT(std::count(relu_r.begin(), relu_r.end(), 0.0f), 100) << "the test must clip something";
  Vec copy_c = nan_vec(1000);
  cpu.copy(copy_c.data(), a.data(), 1000 * sizeof(float));
  EXPECT_EQ(copy_c, a);
}

INSTANTIATE_TEST_SUITE_P(Precisions, CpuOps, ::testing::ValuesIn(kCases), case_name);

// ---- precision set-up -----------------------------------------------------------------------
TEST(CpuPrecision, Bf16SupportedFp16Tf32ErrorsNameCuda) {
  CpuBackend cpu;
  // This project's machines have AVX-512 (oneDNN computes bf16 natively with avx512_bf16 and
  // emulates it on plain AVX-512); below that, bf16 is an error too.
  EXPECT_TRUE(cpu.supports(Op::conv, Precision::fp32));
  for (Precision p : {Precision::fp16, Precision::tf32}) {
    EXPECT_FALSE(cpu.supports(Op::conv, p));
    try {
      cpu.set_precision(p);
      ADD_FAILURE() << "set_precision(" << precision_name(p) << ") did not throw";
    } catch (const ConfigError& e) {
      EXPECT_NE(std::string(e.what()).find("cuda"), std::string::npos) << e.what();
    }
  }
  if (cpu.supports(Op::conv, Precision::bf16)) {
    cpu.set_precision(Precision::bf16);
    EXPECT_EQ(cpu.precision(), Precision::bf16);
  } else {
    std::printf("note: this CPU lacks AVX-512; bf16 is unsupported here\n");
  }
}

// ---- whole nets in blocked layouts against ref ----------------------------------------------
struct Batch {
  Vec images;
  std::vector<int32_t> labels;
};
Batch random_batch(const Shape& sample, int64_t mb, uint64_t seed) {
  Rng rng(seed);
  Batch b;
  b.images.resize(static_cast<size_t>(mb * sample.numel()));
  for (float& v : b.images) v = static_cast<float>(rng.normal());
  for (int64_t i = 0; i < mb; ++i) b.labels.push_back(static_cast<int32_t>(rng.below(10)));
  return b;
}

struct StepResult {
  float loss = 0;
  Vec logits, grads, params_after;
};

// Training steps on one batch (forward, backward, SGD), recording the last step's loss, logits
// and gradients: with 2 steps, the second runs on weights the backend's own gradients moved.
StepResult run_steps(Net& net, Backend& backend, const Batch& b, int steps = 2) {
  Sgd sgd(backend, net.param_count(), SgdOptions{0.9, 1e-4, false});
  StepResult r;
  for (int step = 0; step < steps; ++step) {
    r.loss = net.forward(b.images.data(), b.labels.data(), nullptr, Mode::train);
    net.backward();
    if (step + 1 < steps) sgd.step(net.params(), net.grads(), 0.05f);
  }
  const int64_t n = net.batch() * net.output_shape().numel();
  r.logits.assign(net.output(), net.output() + n);
  r.grads.assign(net.grads(), net.grads() + net.param_count());
  sgd.step(net.params(), net.grads(), 0.05f);
  r.params_after.assign(net.params(), net.params() + net.param_count());
  return r;
}

// Gradients compared per layer: relative L2 error of each layer's slice. Returns the errors.
std::vector<double> layer_grad_errors(Net& net, const Vec& got, const Vec& want) {
  std::vector<double> errors;
  for (int node = 1; node < net.node_count(); ++node) {
    const ParamRange r = net.param_range(node);
    if (r.count == 0) continue;
    double diff = 0, norm = 0;
    for (int64_t i = r.offset; i < r.offset + r.count; ++i) {
      diff += std::pow(double(got[i]) - double(want[i]), 2);
      norm += std::pow(double(want[i]), 2);
    }
    errors.push_back(std::sqrt(diff) / std::max(std::sqrt(norm), 1e-12));
  }
  return errors;
}

class WholeNet : public ::testing::TestWithParam<std::tuple<const char*, Precision>> {};

TEST_P(WholeNet, CpuBlockedFusedMatchesRef) {
  const std::string model = std::get<0>(GetParam());
  const Precision precision = std::get<1>(GetParam());
  const ModelInput in = model_expected_input(model);
  const int64_t mb = model == "lenet" ? 3 : 2;
  const Batch b = random_batch(in.sample, mb, 77);
  RefBackend ref;
  CpuBackend cpu;
  cpu.set_threads(2);
  cpu.set_precision(precision);
  auto net_ref = build_model(model, ref, in, 5);
  auto net_cpu = build_model(model, cpu, in, 5);
  int fused = 0;
  for (int node = 0; node < net_cpu->node_count(); ++node) fused += net_cpu->fused(node);
  EXPECT_EQ(fused, model == "lenet" ? 2 : 19)  // lenet: conv1, conv2 (fc1's ReLU stays);
      << "ReLUs fused";                        // resnet20: stem + 9 conv1 BN + 9 adds
  net_ref->set_batch(mb);
  net_cpu->set_batch(mb);
  // bf16 against the fp32 oracle after one step (a second step would compound the first's
  // rounding through the weights); fp32 after two.
  const bool bf16 = precision == Precision::bf16;
  const StepResult r = run_steps(*net_ref, ref, b, bf16 ? 1 : 2);
  const StepResult c = run_steps(*net_cpu, cpu, b, bf16 ? 1 : 2);
  EXPECT_NEAR(c.loss, r.loss, (bf16 ? 3e-2 : 1e-4) * std::max(1.0f, std::fabs(r.loss))) << model;
  expect_close(c.logits, r.logits, model + " logits", bf16 ? 5e-2 : 1e-3, bf16 ? 1e-2 : 1e-5);
  std::vector<double> errors = layer_grad_errors(*net_cpu, c.grads, r.grads);
  ASSERT_FALSE(errors.empty());
  if (!bf16) {
    for (double e : errors) EXPECT_LE(e, 1e-3) << model << " fp32 gradients";
    return;
  }
  // bf16: gradients are sums of bf16-rounded products, passed back through bf16 diffs, ReLU
  // masks and max-pool argmaxes that rounding flips, and (resnet20) batch-norm backward, whose
  // mean subtraction cancels most of a diff that global average pooling spread evenly over
  // space, leaving the bf16 rounding of that diff: per-layer errors of 10-50% are what bf16
  // gives here, at any batch size (fp32 cpu: ~1e-6). A layout or fusion bug scrambles a layer's
  // gradient (error >= 1), which these bounds catch; bf16 fused vs unfused is checked exactly
  // below, and how well bf16 trains is the Fashion-MNIST test's question
  // (tests/python/test_precision.py).
  const double last_fc = errors.back();  // the classifier's own gradient sees only the logits
  const double worst = *std::max_element(errors.begin(), errors.end());
  std::sort(errors.begin(), errors.end());
  const double median = errors[errors.size() / 2];
  EXPECT_LE(worst, model == "lenet" ? 0.25 : 0.75) << model << " bf16 worst layer";
  EXPECT_LE(median, model == "lenet" ? 0.15 : 0.45) << model << " bf16 median layer";
  EXPECT_LE(last_fc, 0.1) << model << " last fc";
}

INSTANTIATE_TEST_SUITE_P(
    Models, WholeNet,
    ::testing::Combine(::testing::Values("lenet", "resnet20"),
                       ::testing::Values(Precision::fp32, Precision::bf16)),
    [](const auto& info) {
      return std::string(std::get<0>(info.param)) + "_" + precision_name(std::get<1>(info.param));
    });

// A small net with every fusable pattern (conv+ReLU, conv+BN+ReLU, add+ReLU), a flatten and an
// unfused ReLU after fc, built with fusion on and off: the cpu results must agree closely.
std::unique_ptr<Net> fusion_net(Backend& backend, bool fusion) {
  auto net = std::make_unique<Net>(backend);
  net->set_fusion(fusion);
  int x = net->input(Shape{3, 12, 12});
  x = net->add(std::make_unique<Conv2d>("c1", 16, 3, 1, 1), {x});
  x = net->add(std::make_unique<Relu>("r1"), {x});
  int y = net->add(std::make_unique<Conv2d>("c2", 16, 3, 1, 1, false), {x});
  y = net->add(std::make_unique<BatchNorm>("bn2"), {y});
  y = net->add(std::make_unique<Relu>("r2"), {y});
  int s = net->add(std::make_unique<Add>("add"), {x, y});
  s = net->add(std::make_unique<Relu>("r3"), {s});
  s = net->add(std::make_unique<Pool2d>("pool", PoolKind::max, 2), {s});
  s = net->add(std::make_unique<Flatten>("flat"), {s});
  s = net->add(std::make_unique<FullyConnected>("fc1", 32), {s});
  s = net->add(std::make_unique<Relu>("r4"), {s});
  s = net->add(std::make_unique<FullyConnected>("fc2", 10, true, Init::xavier), {s});
  net->add(std::make_unique<SoftmaxCrossEntropy>("loss"), {s});
  net->finalize(9);
  net->set_batch(4);
  return net;
}

// bf16 too: relu(round(x)) == round(relu(x)), so fusion changes no bit of the forward.
class CpuFusion : public ::testing::TestWithParam<Case> {};

TEST_P(CpuFusion, FusedAndUnfusedNetsAgreeAndRefAgrees) {
  const bool bf16 = GetParam().precision == Precision::bf16;
  const Batch b = random_batch(Shape{3, 12, 12}, 4, 3);
  CpuBackend cpu_fused, cpu_plain;
  cpu_fused.set_precision(GetParam().precision);
  cpu_plain.set_precision(GetParam().precision);
  RefBackend ref;
  auto fused = fusion_net(cpu_fused, true);
  auto unfused = fusion_net(cpu_plain, false);
  auto oracle = fusion_net(ref, true);
  int count = 0;
  for (int node = 0; node < fused->node_count(); ++node) {
    count += fused->fused(node);
    EXPECT_FALSE(unfused->fused(node));
  }
  EXPECT_EQ(count, 3) << "r1 (conv), r2 (bn) and r3 (add) fuse; r4 after fc does not";
  const StepResult f = run_steps(*fused, cpu_fused, b);
  const StepResult u = run_steps(*unfused, cpu_plain, b);
  EXPECT_NEAR(f.loss, u.loss, 1e-5 * std::fabs(u.loss) + 1e-6);
  expect_close(f.logits, u.logits, "fused vs unfused logits", 1e-5);
  expect_close(f.grads, u.grads, "fused vs unfused grads", 1e-4);
  if (!bf16) {
    const StepResult r = run_steps(*oracle, ref, b);
    expect_close(f.params_after, r.params_after, "fused cpu vs ref params after SGD", 1e-4);
  }
  // The fused ReLU node's output (the conv's buffer) is the ReLU of the conv: all >= 0.
  const Vec r1(fused->node_output(2), fused->node_output(2) + 4 * 16 * 12 * 12);
  EXPECT_GE(*std::min_element(r1.begin(), r1.end()), 0.0f);
}

INSTANTIATE_TEST_SUITE_P(Precisions, CpuFusion, ::testing::ValuesIn(kCases), case_name);

// ---- reorders per training step -------------------------------------------------------------
TEST(CpuReorders, LenetStepReordersOnlyAtLayoutBoundaries) {
  const ModelInput in = model_expected_input("lenet");
  const Batch b = random_batch(in.sample, 16, 1);
  for (Precision precision : {Precision::fp32, Precision::bf16}) {
    SCOPED_TRACE(precision_name(precision));
    CpuBackend cpu;
    cpu.set_precision(precision);
    auto net = build_model("lenet", cpu, in, 1);
    net->set_batch(16);
    auto step = [&] {
      net->forward(b.images.data(), b.labels.data(), nullptr, Mode::train);
      net->backward();
    };
    step();  // plans everything
    const auto before = cpu.reorder_counts();
    step();
    const auto after = cpu.reorder_counts();
    const int64_t activations = after.activations - before.activations;
    const int64_t weights = after.weights - before.weights;
    // conv1 -> relu(fused) -> pool1 -> conv2 -> relu(fused) -> pool2 stay in nChw16c. Activation
    // reorders per step:
    //   fp32: pool2's blocked output -> plain for fc1 (forward; backward-weights reuses it), and
    //         fc1's plain diff_src -> blocked for pool2's backward: 2.
    //   bf16: the same 2, plus the images -> bf16 (conv1 forward; reused by backward-weights),
    //         relu3's fp32 output -> bf16 for fc2 (reused), fc2's bf16 diff_src -> fp32 for
    //         relu3's backward, relu3's fp32 diff -> bf16 for fc1 (reused), and the fp32 diff
    //         of the logits -> bf16 for fc2: 7.
    EXPECT_EQ(activations, precision == Precision::fp32 ? 2 : 7);
    // Weights: at most one reorder into a primitive's layout per weight tensor and pass (4
    // tensors x forward/backward-data) plus one per gradient back to plain fp32; none grow
    // with the number of layers' activations.
    EXPECT_LE(weights, 4 * 2 + 4);
    EXPECT_GT(weights, 0);
  }
}

}  // namespace
}  // namespace ts
