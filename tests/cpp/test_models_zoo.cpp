// ImageNet model zoo (nn/models/*.cpp): torchvision's exact parameter counts, parsable layer
// tables with readable names, forward FLOPs against the published multiply-add counts, and one
// SGD training step at batch 2 on the cpu backend for every model (finite loss, every layer
// with parameters updated).
#include <gtest/gtest.h>

#include <chrono>
#include <cmath>
#include <cstdio>
#include <map>
#include <memory>
#include <set>
#include <string>
#include <vector>

#include "backend/backend.h"
#include "backend/backend_factory.h"
#include "core/rng.h"
#include "nn/models.h"
#include "nn/optimizer.h"

namespace ts {
namespace {

struct ZooCase {
  const char* name;
  int64_t parameters;   // torchvision: sum(p.numel() for p in model.parameters())
  double gmacs;         // published forward multiply-adds per image (conv + fc), in 1e9
  double dropout;       // torchvision's default dropout (0: the model has none)
};

// Parameter counts from the torchvision model cards; multiply-adds from torchvision's model
// tables ("GFLOPS" there counts multiply-adds, fvcore convention): resnet50 4.09, vgg16 15.47,
// alexnet 0.71, mobilenet_v2 0.30, inception_v3 5.71 (at 299x299, without the aux head).
const std::vector<ZooCase>& zoo() {
  static const std::vector<ZooCase> cases = {
      {"resnet50", 25557032, 4.09, 0.0},     {"vgg16", 138357544, 15.47, 0.5},
      {"alexnet", 61100840, 0.71, 0.5},      {"mobilenet_v2", 3504872, 0.30, 0.2},
      {"inception_v3", 23834568, 5.71, 0.5},
  };
  return cases;
}

// Each zoo net is built once (initialising 138 M parameters takes seconds) on the cpu backend,
// with torchvision's default dropout, and shared by the tests below.
Backend& cpu_backend() {
  static std::unique_ptr<Backend> backend = make_backend("cpu");
  return *backend;
}

Net& zoo_net(const ZooCase& c) {
  Backend& backend = cpu_backend();  // constructed before, so destroyed after, the nets
  static std::map<std::string, std::unique_ptr<Net>> nets;
  auto& net = nets[c.name];
  if (!net) net = build_model(c.name, backend, model_expected_input(c.name), 3, c.dropout);
  return *net;
}

TEST(ModelZoo, ExpectedInputs) {
  for (const ZooCase& c : zoo()) {
    const ModelInput in = model_expected_input(c.name);
    const int64_t side = std::string(c.name) == "inception_v3" ? 299 : 224;
    EXPECT_EQ(in.sample, (Shape{3, side, side})) << c.name;
    EXPECT_EQ(in.outputs, 1000) << c.name;
  }
}

TEST(ModelZoo, ParameterCountsMatchTorchvision) {
  for (const ZooCase& c : zoo()) {
    SCOPED_TRACE(c.name);
    Net& net = zoo_net(c);
    EXPECT_EQ(net.param_count(), c.parameters);
    int64_t from_table = 0;
    for (const LayerInfo& row : net.layer_table()) from_table += row.parameters;
    EXPECT_EQ(from_table, c.parameters);
    EXPECT_EQ(net.output_shape(), (Shape{1000}));
  }
}

// The run's dropout value decides whether the dropout layers are there; they carry no
// parameters. (mobilenet_v2: the cheapest model to build twice.)
TEST(ModelZoo, DropoutSitesFollowTheRunsDropout) {
  auto backend = make_backend("ref");
  const ModelInput in = model_expected_input("mobilenet_v2");
  auto plain = build_model("mobilenet_v2", *backend, in, 1, 0.0);
  auto dropped = build_model("mobilenet_v2", *backend, in, 1, 0.2);
  EXPECT_EQ(plain->param_count(), dropped->param_count());
  const auto with = dropped->layer_table();
  ASSERT_EQ(with.size(), plain->layer_table().size() + 1);
  EXPECT_EQ(with[with.size() - 3].name, "classifier.dropout");
  EXPECT_EQ(with[with.size() - 3].descriptor.rfind("dropout:p0.20", 0), 0u) << with[with.size() - 3].descriptor;
}

// Every descriptor parses back to itself: the backend ops through their parsers, the net-level
// layers (add, concat, dropout, flatten, loss) as "<kind>:<fields>".
void expect_parsable(const LayerInfo& row) {
  SCOPED_TRACE(row.name + " " + row.descriptor);
  const std::string& d = row.descriptor;
  ASSERT_FALSE(d.empty());
  const auto colon = d.find(':');
  ASSERT_NE(colon, std::string::npos);
  const std::string prefix = d.substr(0, colon);
  ASSERT_LT(colon + 1, d.size());
  if (prefix == "conv") {
    EXPECT_EQ(ConvDesc::parse(d).str(), d);
    EXPECT_EQ(row.kind, "conv");
  } else if (prefix.rfind("pool", 0) == 0) {
    EXPECT_EQ(PoolDesc::parse(d).str(), d);
    EXPECT_EQ(row.kind, "pool");
  } else if (prefix == "fc") {
    EXPECT_EQ(FcDesc::parse(d).str(), d);
    EXPECT_EQ(row.kind, "fc");
  } else if (prefix == "bn") {
    EXPECT_EQ(BnDesc::parse(d).str(), d);
    EXPECT_EQ(row.kind, "bn");
  } else if (prefix == "eltwise") {
    EXPECT_EQ(EltwiseDesc::parse(d).str(), d);
  } else {
    const std::set<std::string> net_level = {"add", "concat", "dropout", "flatten", "softmax_xent"};
    EXPECT_TRUE(net_level.count(prefix)) << "unknown descriptor kind " << prefix;
  }
}

std::map<std::string, LayerInfo> by_name(const std::vector<LayerInfo>& table) {
  std::map<std::string, LayerInfo> rows;
  for (const LayerInfo& row : table) {
    EXPECT_TRUE(rows.emplace(row.name, row).second) << "duplicate layer name " << row.name;
  }
  return rows;
}

TEST(ModelZoo, LayerTablesParseAndNameTheLayers) {
  std::map<std::string, std::map<std::string, LayerInfo>> tables;
  for (const ZooCase& c : zoo()) {
    SCOPED_TRACE(c.name);
    const auto table = zoo_net(c).layer_table();
    for (const LayerInfo& row : table) expect_parsable(row);
    EXPECT_EQ(table.back().name, "loss");
    tables[c.name] = by_name(table);
  }
  // Readable names at the places the docs describe, with torchvision's shapes.
  auto& r50 = tables["resnet50"];
  ASSERT_TRUE(r50.count("layer3.2.conv2"));
  ConvDesc c = ConvDesc::parse(r50["layer3.2.conv2"].descriptor);
  EXPECT_EQ(c.ic, 256);
  EXPECT_EQ(c.oc, 256);
  EXPECT_EQ(c.kh, 3);
  EXPECT_FALSE(c.bias);
  // v1.5: the stride of the first bottleneck of layer2 sits in the 3x3 convolution.
  EXPECT_EQ(ConvDesc::parse(r50["layer2.0.conv1"].descriptor).sh, 1);
  EXPECT_EQ(ConvDesc::parse(r50["layer2.0.conv2"].descriptor).sh, 2);
  EXPECT_EQ(ConvDesc::parse(r50["layer2.0.downsample.0"].descriptor).sh, 2);
  EXPECT_EQ(r50["layer4.2.conv3"].parameters, 512 * 2048);
  EXPECT_EQ(r50["fc"].parameters, 2048 * 1000 + 1000);

  auto& vgg = tables["vgg16"];
  EXPECT_EQ(vgg["fc6"].parameters, 25088LL * 4096 + 4096);
  EXPECT_EQ(ConvDesc::parse(vgg["conv5_3"].descriptor).ih, 14);
  EXPECT_TRUE(vgg.count("drop6") && vgg.count("drop7"));

  auto& alex = tables["alexnet"];
  EXPECT_EQ(PoolDesc::parse(alex["pool5"].descriptor).oh(), 6);  // adaptive 6x6 pool = identity
  EXPECT_EQ(alex["fc6"].parameters, 9216LL * 4096 + 4096);
  EXPECT_EQ(ConvDesc::parse(alex["conv1"].descriptor).oh(), 55);

  auto& mb = tables["mobilenet_v2"];
  ConvDesc dw = ConvDesc::parse(mb["features.14.dw"].descriptor);
  EXPECT_EQ(dw.groups, 576);
  EXPECT_EQ(dw.sh, 2);
  EXPECT_EQ(mb["features.14.dw_relu6"].kind, "relu6");
  EXPECT_TRUE(mb.count("features.16.add"));   // stride 1, 160 -> 160
  EXPECT_FALSE(mb.count("features.14.add"));  // stride 2
  EXPECT_EQ(mb["classifier.fc"].parameters, 1280 * 1000 + 1000);

  auto& inc = tables["inception_v3"];
  ConvDesc f = ConvDesc::parse(inc["Mixed_6b.branch7x7_2.conv"].descriptor);
  EXPECT_EQ(f.kh, 1);
  EXPECT_EQ(f.kw, 7);
  EXPECT_EQ(f.pw, 3);
  EXPECT_EQ(f.ic, 128);
  EXPECT_EQ(f.ih, 17);
  EXPECT_EQ(ConvDesc::parse(inc["Mixed_7c.branch3x3_2b.conv"].descriptor).kh, 3);
  EXPECT_EQ(ConvDesc::parse(inc["Mixed_7c.branch3x3_2b.conv"].descriptor).ih, 8);
  EXPECT_EQ(ConvDesc::parse(inc["Conv2d_4a_3x3.conv"].descriptor).oh(), 71);
  EXPECT_EQ(inc["Mixed_5b.branch5x5_2.bn"].parameters, 2 * 64);
  EXPECT_EQ(inc["fc"].parameters, 2048 * 1000 + 1000);
  EXPECT_FALSE(inc.count("AuxLogits.fc"));
}

// FLOP convention (docs/models.md): a multiply-add is 2 FLOPs; the published figures count the
// multiply-adds of convolutions and fully connected layers only. The net's flops_per_sample
// also counts bias adds, BN, activations, pooling, adds and the loss, so it is a little larger.
TEST(ModelZoo, ForwardFlopsMatchPublishedMultiplyAdds) {
  for (const ZooCase& c : zoo()) {
    SCOPED_TRACE(c.name);
    Net& net = zoo_net(c);
    int64_t macs = 0;
    for (const LayerInfo& row : net.layer_table()) {
      if (row.kind == "conv") macs += ConvDesc::parse(row.descriptor).flops() / 2;
      if (row.kind == "fc") macs += FcDesc::parse(row.descriptor).flops() / 2;
    }
    const double gmacs = static_cast<double>(macs) / 1e9;
    EXPECT_NEAR(gmacs, c.gmacs, 0.03 * c.gmacs) << macs;
    const double total = static_cast<double>(net.flops_per_sample());
    EXPECT_GE(total, 2.0 * static_cast<double>(macs));
    EXPECT_LE(total, 2.0 * static_cast<double>(macs) * 1.10);
    std::printf("%-13s %.4f GMACs (published %.2f), %.4f GFLOPs per sample, all layers / 2 MACs %.4f\n",
                c.name, gmacs, c.gmacs, total / 1e9, total / (2.0 * static_cast<double>(macs)));
  }
}

// One step of forward + backward + SGD on synthetic data at batch 2 on the cpu backend, with
// torchvision's default dropout: the loss is finite and every layer's parameters move.
TEST(ModelZoo, OneTrainingStepOnCpu) {
  for (const ZooCase& c : zoo()) {
    SCOPED_TRACE(c.name);
    const ModelInput in = model_expected_input(c.name);
    Net& net = zoo_net(c);
    const auto start = std::chrono::steady_clock::now();
    net.set_batch(2);
    Rng rng(5);
    std::vector<float> images(static_cast<size_t>(2 * in.sample.numel()));
    for (float& v : images) v = static_cast<float>(rng.uniform());
    const std::vector<int32_t> labels{17, 923};
    const float loss = net.forward(images.data(), labels.data(), nullptr, Mode::train);
    ASSERT_TRUE(std::isfinite(loss)) << loss;
    EXPECT_GT(loss, 0.0f);
    EXPECT_LT(loss, 100.0f);
    int64_t seen = 0;
    net.backward([&](ParamRange r) { seen += r.count; });
    EXPECT_EQ(seen, net.param_count());
    const std::vector<float> before(net.params(), net.params() + net.param_count());
    Sgd sgd(cpu_backend(), net.param_count(), SgdOptions{0.9, 0.0, false});
    sgd.step(net.params(), net.grads(), 0.01);
    int layers_with_params = 0, layers_moved = 0;
    for (int node = 1; node < net.node_count(); ++node) {
      const ParamRange r = net.param_range(node);
      if (r.count == 0) continue;
      ++layers_with_params;
      bool moved = false;
      for (int64_t i = r.offset; i < r.offset + r.count && !moved; ++i)
        moved = net.params()[i] != before[static_cast<size_t>(i)];
      if (moved) ++layers_moved;
      else ADD_FAILURE() << "parameters of " << net.layer(node)->name() << " did not change";
      bool finite = true;
      for (int64_t i = r.offset; i < r.offset + r.count; ++i) finite = finite && std::isfinite(net.params()[i]);
      EXPECT_TRUE(finite) << net.layer(node)->name();
    }
    EXPECT_GT(layers_with_params, 0);
    EXPECT_EQ(layers_moved, layers_with_params);
    net.set_batch(1);  // release the batch-2 activations before the next model
    std::printf("%-13s training step at batch 2: %.1f s (informational)\n", c.name,
                std::chrono::duration<double>(std::chrono::steady_clock::now() - start).count());
  }
}

}  // namespace
}  // namespace ts
