// Models by name: parameter counts, a forward+backward at batch 2 on the cpu backend with a
// finite loss, layer tables, and errors for unknown models and inputs that do not fit.
#include <gtest/gtest.h>

#include <cmath>

#include "backend/backend.h"
#include "backend/backend_factory.h"
#include "core/error.h"
#include "core/rng.h"
#include "nn/models.h"

namespace ts {
namespace {

int64_t count_params(const std::string& name) {
  auto backend = make_backend("ref");
  auto net = build_model(name, *backend, model_expected_input(name), 1);
  int64_t from_table = 0;
  for (const LayerInfo& row : net->layer_table()) from_table += row.parameters;
  EXPECT_EQ(from_table, net->param_count()) << name;
  return net->param_count();
}

TEST(Models, ParameterCounts) {
  EXPECT_EQ(count_params("lenet"), 1663370);
  EXPECT_EQ(count_params("resnet20"), 272474);
  EXPECT_EQ(count_params("alexnet_cifar"), 85098);  // docs/models.md
  // 784*256+256 + 256*128+128 + 128*10+10
  EXPECT_EQ(count_params("mlp"), 200960 + 32896 + 1290);
  EXPECT_EQ(count_params("neuron"), 2);
}

TEST(Models, Resnet20StateIsBnRunningStats) {
  auto backend = make_backend("ref");
  auto net = build_model("resnet20", *backend, model_expected_input("resnet20"), 1);
  // BN channels: 16 + 3*2*16 + (3*2*32 + 32) + (3*2*64 + 64) = 784; mean + var each.
  EXPECT_EQ(net->state_count(), 2 * 784);
}

// The small models; the ImageNet zoo has its own training-step test (test_models_zoo.cpp).
const std::vector<std::string> kSmallModels = {"lenet", "mlp", "neuron", "alexnet_cifar",
                                               "resnet20"};

TEST(Models, NamesListSmallModelsThenZoo) {
  std::vector<std::string> expected = kSmallModels;
  for (const char* zoo : {"resnet50", "vgg16", "alexnet", "mobilenet_v2", "inception_v3"})
    expected.emplace_back(zoo);
  EXPECT_EQ(model_names(), expected);
}

TEST(Models, ForwardBackwardBatch2OnCpu) {
  auto backend = make_backend("cpu");
  for (const std::string& name : kSmallModels) {
    SCOPED_TRACE(name);
    ModelInput in = model_expected_input(name);
    auto net = build_model(name, *backend, in, 3);
    net->set_batch(2);
    Rng rng(5);
    std::vector<float> images(static_cast<size_t>(2 * in.sample.numel()));
    for (float& v : images) v = static_cast<float>(rng.uniform());
    std::vector<int32_t> labels{1, 7};
    std::vector<float> targets{0.0f, 1.0f};
    const bool classifier = net->is_classifier();
    float loss = net->forward(images.data(), classifier ? labels.data() : nullptr,
                              classifier ? nullptr : targets.data(), Mode::train);
    EXPECT_TRUE(std::isfinite(loss));
    if (classifier) {
      EXPECT_NEAR(loss, std::log(10.0), 2.0);  // near-uniform at init
    }
    int ranges = 0;
    int64_t seen = 0;
    net->backward([&](ParamRange r) {
      ++ranges;
      seen += r.count;
    });
    EXPECT_EQ(seen, net->param_count());
    EXPECT_GT(ranges, 0);
    double norm = 0;
    for (int64_t i = 0; i < net->param_count(); ++i) norm += std::fabs(net->grads()[i]);
    EXPECT_TRUE(std::isfinite(norm));
    EXPECT_GT(norm, 0.0);
    EXPECT_EQ(net->output_shape().numel(), in.outputs);
    EXPECT_GT(net->flops_per_sample(), 0);
  }
}

TEST(Models, LenetLayerTable) {
  auto backend = make_backend("ref");
  auto net = build_model("lenet", *backend, model_expected_input("lenet"), 1);
  auto table = net->layer_table();
  ASSERT_FALSE(table.empty());
  EXPECT_EQ(table[0].name, "conv1");
  EXPECT_EQ(table[0].kind, "conv");
  EXPECT_EQ(table[0].parameters, 832);
  EXPECT_EQ(ConvDesc::parse(table[0].descriptor).oc, 32);
  EXPECT_EQ(table[0].flops, 2LL * 32 * 28 * 28 * 25 + 32 * 28 * 28);
}

TEST(Models, LenetDropoutAddsALayer) {
  auto backend = make_backend("ref");
  auto plain = build_model("lenet", *backend, model_expected_input("lenet"), 1);
  auto dropped = build_model("lenet", *backend, model_expected_input("lenet"), 1, 0.5);
  EXPECT_EQ(dropped->layer_table().size(), plain->layer_table().size() + 1);
  EXPECT_EQ(dropped->param_count(), plain->param_count());
}

TEST(Models, SameSeedSameWeights) {
  auto backend = make_backend("ref");
  auto a = build_model("lenet", *backend, model_expected_input("lenet"), 9);
  auto b = build_model("lenet", *backend, model_expected_input("lenet"), 9);
  auto c = build_model("lenet", *backend, model_expected_input("lenet"), 10);
  ASSERT_EQ(a->param_count(), b->param_count());
  EXPECT_TRUE(std::equal(a->params(), a->params() + a->param_count(), b->params()));
  EXPECT_FALSE(std::equal(a->params(), a->params() + a->param_count(), c->params()));
}

std::string config_error(const std::function<void()>& f) {
  try {
    f();
  } catch (const ConfigError& e) {
    return e.what();
  }
  return "(no ConfigError)";
}

TEST(Models, Errors) {
  auto backend = make_backend("ref");
  std::string msg = config_error([&] { build_model("lenett", *backend, {Shape{1, 28, 28}, 10}, 1); });
  EXPECT_NE(msg.find("lenett"), std::string::npos) << msg;
  EXPECT_NE(msg.find("resnet20"), std::string::npos) << msg;  // lists the known ones
  msg = config_error([&] { build_model("resnet50", *backend, {Shape{3, 32, 32}, 10}, 1); });
  EXPECT_EQ(msg, "model resnet50 expects input 3x224x224 with 1000 classes; the data set gives "
                 "3x32x32 with 10 classes");
  msg = config_error([&] { build_model("inception_v3", *backend, {Shape{3, 224, 224}, 1000}, 1); });
  EXPECT_NE(msg.find("expects input 3x299x299"), std::string::npos) << msg;
  msg = config_error([&] { build_model("resnet50", *backend, model_expected_input("resnet50"), 1, 0.2); });
  EXPECT_NE(msg.find("models with dropout: lenet, mlp, vgg16, alexnet, mobilenet_v2, inception_v3"),
            std::string::npos) << msg;
  msg = config_error([&] { build_model("lenet", *backend, {Shape{3, 32, 32}, 10}, 1); });
  EXPECT_EQ(msg, "model lenet expects input 1x28x28 with 10 classes; the data set gives 3x32x32");
  msg = config_error([&] { build_model("resnet20", *backend, {Shape{3, 32, 32}, 100}, 1); });
  EXPECT_NE(msg.find("100 classes"), std::string::npos) << msg;
  msg = config_error([&] { build_model("resnet20", *backend, model_expected_input("resnet20"), 1, 0.5); });
  EXPECT_NE(msg.find("dropout"), std::string::npos) << msg;
  EXPECT_THROW(model_expected_input("nope"), ConfigError);
  // mlp takes any input.
  auto mlp = build_model("mlp", *backend, {Shape{3, 32, 32}, 100}, 1);
  EXPECT_EQ(mlp->output_shape(), (Shape{100}));
}

}  // namespace
}  // namespace ts
