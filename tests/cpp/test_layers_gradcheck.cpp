// Finite-difference gradient checks for every layer on the ref backend: central differences of
// loss = sum(dst * random weights) w.r.t. every input element and every parameter, compared
// with the layer's backward (relative error ~1e-2 in fp32). Small shapes with stride 2,
// padding, odd sizes, groups and batch 1.
#include <gtest/gtest.h>

#include <algorithm>
#include <cmath>
#include <functional>
#include <memory>
#include <numeric>

#include "backend/backend.h"
#include "backend/backend_factory.h"
#include "core/error.h"
#include "core/rng.h"
#include "nn/layers.h"

namespace ts {
namespace {

struct GradcheckOptions {
  int64_t mb = 2;
  double eps = 5e-3;
  double rel_tol = 1e-2;
  double abs_tol = 2e-3;
  // Inputs are distinct values at least `spacing` apart (no max-pool ties, no ReLU kinks).
  bool distinct_inputs = false;
  Mode mode = Mode::train;
  std::function<void(Layer&)> before_forward;  // e.g. re-seed dropout so every pass agrees
};

void expect_close(double analytic, double numeric, const GradcheckOptions& o,
                  const std::string& what) {
  const double err = std::fabs(analytic - numeric);
  const double scale = std::max(std::fabs(analytic), std::fabs(numeric));
  EXPECT_LE(err, o.rel_tol * scale + o.abs_tol)
      << what << ": analytic " << analytic << " numeric " << numeric;
}

// One ref backend for the whole test program: the layers under test keep device buffers (pool
// workspaces, BN statistics) that must not outlive the backend that allocated them.
Backend& ref_backend() {
  static std::unique_ptr<Backend> backend = make_backend("ref");
  return *backend;
}

// (mb, per-sample dims...)
Shape batched(int64_t mb, const Shape& per_sample) {
  Shape s{mb};
  for (int64_t d : per_sample.dims) s.dims.push_back(d);
  return s;
}

// Runs the check for `layer` with per-sample input shapes `shapes`.
void gradcheck(Layer& layer, const std::vector<Shape>& shapes, GradcheckOptions o = {}) {
  Backend* backend = &ref_backend();
  Rng rng(42);
  const Shape out = layer.setup(shapes);
  std::vector<float> params(static_cast<size_t>(layer.param_count()));
  std::vector<float> grads(params.size());
  std::vector<float> state(static_cast<size_t>(layer.state_count()));
  layer.bind(params.empty() ? nullptr : params.data(), grads.empty() ? nullptr : grads.data(),
             state.empty() ? nullptr : state.data());
  layer.init(rng, params.data(), state.data());
  // Perturb parameters away from their neat initial values (BN scale 1 / shift 0, bias 0).
  for (float& p : params) p += static_cast<float>(0.3 * (rng.uniform() - 0.5));
  std::vector<TensorDesc> src_descs;
  for (const Shape& s : shapes) src_descs.push_back(TensorDesc::plain(batched(o.mb, s)));
  const TensorDesc dst_desc = layer.plan(*backend, o.mb, src_descs);
  // The ref backend plans plain f32 (a flatten keeps its input's dims: the same bytes).
  ASSERT_TRUE(dst_desc.is_plain() && dst_desc.dtype == DType::f32) << dst_desc.str();
  ASSERT_EQ(dst_desc.numel(), o.mb * out.numel()) << dst_desc.str();

  std::vector<std::vector<float>> srcs(shapes.size());
  for (size_t i = 0; i < shapes.size(); ++i) {
    auto& src = srcs[i];
    src.resize(static_cast<size_t>(o.mb * shapes[i].numel()));
    if (o.distinct_inputs) {
      // A shuffled ladder of values spaced 0.05 apart, none within 0.025 of zero.
      for (size_t k = 0; k < src.size(); ++k)
        src[k] = static_cast<float>(0.025 + 0.05 * static_cast<double>(k)) *
                 (k % 2 ? 1.0f : -1.0f);
      for (size_t k = src.size(); k > 1; --k) std::swap(src[k - 1], src[rng.below(k)]);
    } else {
      for (float& v : src) v = static_cast<float>(2.0 * rng.uniform() - 1.0);
    }
  }
  const size_t out_size = static_cast<size_t>(o.mb * out.numel());
  std::vector<float> weights(out_size), dst(out_size);
  for (float& w : weights) w = static_cast<float>(2.0 * rng.uniform() - 1.0);

  std::vector<Tensor> src_tensors;
  for (size_t i = 0; i < shapes.size(); ++i) src_tensors.push_back(Tensor(srcs[i].data(), src_descs[i]));
  auto loss = [&]() {
    if (o.before_forward) o.before_forward(layer);
    layer.forward(*backend, src_tensors, Tensor(dst.data(), dst_desc), o.mode);
    double sum = 0;
    for (size_t k = 0; k < out_size; ++k) sum += static_cast<double>(dst[k]) * weights[k];
    return sum;
  };

  // Analytic gradients.
  loss();
  std::vector<std::vector<float>> diff_srcs(shapes.size());
  std::vector<Tensor> diff_tensors;
  for (size_t i = 0; i < shapes.size(); ++i) {
    diff_srcs[i].assign(srcs[i].size(), std::nanf(""));
    diff_tensors.push_back(Tensor(diff_srcs[i].data(), src_descs[i]));
  }
  std::fill(grads.begin(), grads.end(), std::nanf(""));
  layer.backward(*backend, src_tensors, Tensor(dst.data(), dst_desc), Tensor(weights.data(), dst_desc), diff_tensors);
  const std::vector<float> dst_saved = dst;

  // Numeric gradients w.r.t. every input element.
  for (size_t i = 0; i < shapes.size(); ++i)
    for (size_t k = 0; k < srcs[i].size(); ++k) {
      const float saved = srcs[i][k];
      srcs[i][k] = static_cast<float>(saved + o.eps);
      const double plus = loss();
      srcs[i][k] = static_cast<float>(saved - o.eps);
      const double minus = loss();
      srcs[i][k] = saved;
      expect_close(diff_srcs[i][k], (plus - minus) / (2 * o.eps), o,
                   layer.info().descriptor + " diff_src[" + std::to_string(i) + "][" +
                       std::to_string(k) + "]");
    }
  // ... and w.r.t. every parameter.
  for (size_t k = 0; k < params.size(); ++k) {
    const float saved = params[k];
    params[k] = static_cast<float>(saved + o.eps);
    const double plus = loss();
    params[k] = static_cast<float>(saved - o.eps);
    const double minus = loss();
    params[k] = saved;
    expect_close(grads[k], (plus - minus) / (2 * o.eps), o,
                 layer.info().descriptor + " diff_param[" + std::to_string(k) + "]");
  }
}

// Loss layers: d(mean loss)/d(src) against central differences.
void gradcheck_loss(LossLayer& layer, const Shape& shape, int64_t mb, bool classifier) {
  Backend* backend = &ref_backend();
  Rng rng(7);
  layer.setup({shape});
  const TensorDesc src_desc = TensorDesc::plain(batched(mb, shape));
  layer.plan(*backend, mb, {src_desc});
  const int64_t n = shape.numel();
  std::vector<float> src(static_cast<size_t>(mb * n)), targets(src.size()), diff(src.size());
  std::vector<int32_t> labels(static_cast<size_t>(mb));
  for (float& v : src) v = static_cast<float>(2.0 * rng.uniform() - 1.0);
  for (float& v : targets) v = static_cast<float>(rng.uniform());
  for (auto& l : labels) l = static_cast<int32_t>(rng.below(static_cast<uint64_t>(n)));
  const int32_t* lab = classifier ? labels.data() : nullptr;
  const float* tgt = classifier ? nullptr : targets.data();
  const Tensor src_tensor(src.data(), src_desc);
  auto forward_loss = [&] {
    float value = 0;
    layer.forward_loss(*backend, src_tensor, lab, tgt, &value);
    return double(value);
  };
  forward_loss();
  layer.backward_loss(*backend, src_tensor, Tensor(diff.data(), src_desc));
  const double eps = 1e-2;
  GradcheckOptions o;
  o.abs_tol = 1e-4;
  for (size_t k = 0; k < src.size(); ++k) {
    const float saved = src[k];
    src[k] = static_cast<float>(saved + eps);
    const double plus = forward_loss();
    src[k] = static_cast<float>(saved - eps);
    const double minus = forward_loss();
    src[k] = saved;
    expect_close(diff[k], (plus - minus) / (2 * eps), o, layer.kind() + " diff_src");
  }
}

TEST(Gradcheck, ConvStride1Pad) {
  Conv2d conv("conv", 3, 3, 1, 1);
  gradcheck(conv, {Shape{2, 5, 5}});
}

TEST(Gradcheck, ConvStride2PadOddBatch1) {
  Conv2dOptions o;
  o.out_channels = 4;
  o.kh = 3;
  o.kw = 2;
  o.sh = 2;
  o.sw = 1;
  o.ph = 1;
  o.pw = 0;
  Conv2d conv("conv", o);
  GradcheckOptions g;
  g.mb = 1;
  gradcheck(conv, {Shape{3, 7, 5}}, g);
}

TEST(Gradcheck, ConvGroupsNoBias) {
  Conv2dOptions o;
  o.out_channels = 4;
  o.kh = o.kw = 3;
  o.sh = o.sw = 2;
  o.ph = o.pw = 1;
  o.groups = 2;
  o.bias = false;
  Conv2d conv("conv", o);
  gradcheck(conv, {Shape{4, 6, 6}});
}

TEST(Gradcheck, Conv1x1Stride2) {
  Conv2d conv("proj", 3, 1, 2, 0, false);
  gradcheck(conv, {Shape{2, 5, 5}});
}

TEST(Gradcheck, MaxPool) {
  Pool2d pool("pool", PoolKind::max, 2);
  GradcheckOptions g;
  g.distinct_inputs = true;
  gradcheck(pool, {Shape{2, 4, 6}}, g);
}

TEST(Gradcheck, MaxPoolOverlappingPaddedOdd) {
  Pool2dOptions o;
  o.kind = PoolKind::max;
  o.kh = o.kw = 3;
  o.sh = o.sw = 2;
  o.ph = o.pw = 1;
  Pool2d pool("pool", o);
  GradcheckOptions g;
  g.distinct_inputs = true;
  g.mb = 1;
  gradcheck(pool, {Shape{2, 7, 5}}, g);
}

TEST(Gradcheck, AvgPoolOverlappingPadded) {
  Pool2dOptions o;
  o.kind = PoolKind::avg;
  o.kh = o.kw = 3;
  o.sh = o.sw = 2;
  o.ph = o.pw = 1;
  Pool2d pool("pool", o);
  gradcheck(pool, {Shape{2, 7, 6}});
}

TEST(Gradcheck, AvgPoolStride2NoPad) {
  Pool2d pool("pool", PoolKind::avg, 3, 2);
  gradcheck(pool, {Shape{3, 9, 9}});
}

TEST(Gradcheck, GlobalAvgPool) {
  GlobalAvgPool pool("gap");
  EXPECT_EQ(pool.setup({Shape{3, 5, 4}}), (Shape{3, 1, 1}));
  gradcheck(pool, {Shape{3, 5, 4}});
}

TEST(Gradcheck, FullyConnectedFromImage) {
  FullyConnected fc("fc", 5);
  EXPECT_EQ(fc.setup({Shape{2, 3, 3}}), (Shape{5}));
  EXPECT_EQ(fc.param_count(), 5 * 18 + 5);
  gradcheck(fc, {Shape{2, 3, 3}});
}

TEST(Gradcheck, FullyConnectedNoBiasBatch1) {
  FullyConnected fc("fc", 3, false, Init::xavier);
  GradcheckOptions g;
  g.mb = 1;
  gradcheck(fc, {Shape{7}}, g);
}

TEST(Gradcheck, Relu) {
  Relu relu("relu");
  GradcheckOptions g;
  g.distinct_inputs = true;
  gradcheck(relu, {Shape{3, 3, 3}}, g);
}

TEST(Gradcheck, Relu6) {
  // 280 distinct inputs from -14 to 14 (spaced 0.05, none within 0.025 of 0 or 6): both kinks.
  Relu6 relu6("relu6");
  GradcheckOptions g;
  g.distinct_inputs = true;
  gradcheck(relu6, {Shape{4, 5, 7}}, g);
}

TEST(Gradcheck, Sigmoid) {
  Sigmoid sigmoid("sigmoid");
  gradcheck(sigmoid, {Shape{2, 3, 3}});
}

TEST(Gradcheck, BatchNormTraining) {
  BatchNorm bn("bn");
  GradcheckOptions g;
  g.mb = 3;
  g.eps = 2e-3;
  gradcheck(bn, {Shape{3, 3, 2}}, g);
}

TEST(Gradcheck, BatchNormTrainingFeatures) {
  BatchNorm bn("bn");
  GradcheckOptions g;
  g.mb = 5;
  g.eps = 2e-3;
  gradcheck(bn, {Shape{4}}, g);
}

TEST(Gradcheck, BatchNormInferenceParams) {
  // Inference mode normalises with the running statistics: an affine map.
  BatchNorm bn("bn");
  bn.setup({Shape{2, 3, 3}});
  std::vector<float> params(4), grads(4), state(4);
  bn.bind(params.data(), grads.data(), state.data());
  Rng rng(1);
  bn.init(rng, params.data(), state.data());
  EXPECT_EQ(params, (std::vector<float>{1, 1, 0, 0}));
  EXPECT_EQ(state, (std::vector<float>{0, 0, 1, 1}));
}

TEST(Gradcheck, Dropout) {
  Dropout drop("drop", 0.4);
  GradcheckOptions g;
  // Re-seed before every pass so all finite-difference evaluations share one mask.
  g.before_forward = [](Layer& layer) {
    Rng rng(99);
    layer.init(rng, nullptr, nullptr);
  };
  gradcheck(drop, {Shape{3, 4, 4}}, g);
}

TEST(Gradcheck, Flatten) {
  Flatten flatten("flatten");
  EXPECT_EQ(flatten.setup({Shape{2, 3, 3}}), (Shape{18}));
  gradcheck(flatten, {Shape{2, 3, 3}});
}

TEST(Gradcheck, AddTwo) {
  Add add("add");
  gradcheck(add, {Shape{2, 3, 3}, Shape{2, 3, 3}});
}

TEST(Gradcheck, AddThreeBatch1) {
  Add add("add");
  GradcheckOptions g;
  g.mb = 1;
  gradcheck(add, {Shape{3, 2, 5}, Shape{3, 2, 5}, Shape{3, 2, 5}}, g);
}

TEST(Gradcheck, Concat) {
  Concat concat("concat");
  EXPECT_EQ(concat.setup({Shape{1, 3, 3}, Shape{3, 3, 3}, Shape{2, 3, 3}}), (Shape{6, 3, 3}));
  gradcheck(concat, {Shape{1, 3, 3}, Shape{3, 3, 3}, Shape{2, 3, 3}});
}

TEST(Gradcheck, SoftmaxCrossEntropy) {
  SoftmaxCrossEntropy loss("loss");
  gradcheck_loss(loss, Shape{5}, 3, true);
}

TEST(Gradcheck, SoftmaxCrossEntropyBatch1) {
  SoftmaxCrossEntropy loss("loss");
  gradcheck_loss(loss, Shape{4, 1, 1}, 1, true);
}

TEST(Gradcheck, MeanSquaredError) {
  MeanSquaredError loss("loss");
  gradcheck_loss(loss, Shape{3}, 4, false);
}

TEST(Gradcheck, ShapeErrorsNameTheLayer) {
  Conv2d conv("conv7", 4, 5);
  try {
    conv.setup({Shape{3, 3, 3}});
    FAIL() << "expected ConfigError";
  } catch (const ConfigError& e) {
    EXPECT_NE(std::string(e.what()).find("conv7"), std::string::npos) << e.what();
  }
  Add add("add1");
  EXPECT_THROW(add.setup({Shape{2, 3, 3}, Shape{3, 3, 3}}), ConfigError);
  Concat concat("cat1");
  EXPECT_THROW(concat.setup({Shape{2, 3, 3}, Shape{2, 4, 3}}), ConfigError);
  Conv2dOptions grouped;
  grouped.out_channels = 4;
  grouped.groups = 3;
  Conv2d bad_groups("conv8", grouped);
  EXPECT_THROW(bad_groups.setup({Shape{4, 3, 3}}), ConfigError);
}

}  // namespace
}  // namespace ts
