// Models by name (see models.h and docs/models.md). Each builder checks the data's per-sample
// shape and class count, adds its layers to a Net and finalizes it from the seed.
#include "nn/models.h"

#include "core/error.h"
#include "core/strings.h"
#include "nn/layers.h"
#include "nn/models/zoo.h"

namespace ts {
namespace {

std::string shape_text(const Shape& s) {
  std::string text;
  for (int i = 0; i < s.rank(); ++i) {
    if (i) text += 'x';
    text += std::to_string(s[i]);
  }
  return text;
}

// Throws "model lenet expects input 1x28x28 with 10 classes; the data set gives 3x32x32".
void expect_input(const std::string& model, const ModelInput& want, const ModelInput& got,
                  bool classifier = true) {
  const char* what = classifier ? " classes" : " outputs";
  if (got.sample != want.sample || got.outputs != want.outputs) {
    std::string gives = shape_text(got.sample);
    if (got.outputs != want.outputs) gives += " with " + std::to_string(got.outputs) + what;
    throw ConfigError("model " + model + " expects input " + shape_text(want.sample) + " with " +
                      std::to_string(want.outputs) + what + "; the data set gives " + gives);
  }
}

using zoo::add_layer;

// LeNet-style Fashion-MNIST net (1,663,370 parameters):
//   conv1 5x5/32 pad 2 -> relu -> maxpool 2   (1,28,28) -> (32,14,14)
//   conv2 5x5/64 pad 2 -> relu -> maxpool 2   -> (64,7,7)
//   fc1 3136 -> 512 -> relu [-> dropout p] -> fc2 512 -> 10 -> softmax cross-entropy
void build_lenet(Net& net, const ModelInput&, double dropout) {
  int x = net.input(Shape{1, 28, 28});
  x = add_layer<Conv2d>(net, x, "conv1", 32, 5, 1, 2);
  x = add_layer<Relu>(net, x, "relu1");
  x = add_layer<Pool2d>(net, x, "pool1", PoolKind::max, 2);
  x = add_layer<Conv2d>(net, x, "conv2", 64, 5, 1, 2);
  x = add_layer<Relu>(net, x, "relu2");
  x = add_layer<Pool2d>(net, x, "pool2", PoolKind::max, 2);
  x = add_layer<FullyConnected>(net, x, "fc1", 512);
  x = add_layer<Relu>(net, x, "relu3");
  if (dropout > 0) x = add_layer<Dropout>(net, x, "drop1", dropout);
  x = add_layer<FullyConnected>(net, x, "fc2", 10, true, Init::xavier);
  add_layer<SoftmaxCrossEntropy>(net, x, "loss");
}

// Multi-layer perceptron on any input: flatten -> fc 256 -> relu [-> dropout] -> fc 128 ->
// relu [-> dropout] -> fc classes.
void build_mlp(Net& net, const ModelInput& in, double dropout) {
  int x = net.input(in.sample);
  x = add_layer<Flatten>(net, x, "flatten");
  x = zoo::fc_relu_dropout(net, x, "1", 256, dropout);
  x = zoo::fc_relu_dropout(net, x, "2", 128, dropout);
  x = add_layer<FullyConnected>(net, x, "fc3", in.outputs, true, Init::xavier);
  add_layer<SoftmaxCrossEntropy>(net, x, "loss");
}

// The single neuron of the SHM-Learn-Dist experiment: y = sigmoid(w x + b), MSE against
// [x >= 0.5] for x ~ U[0,1). 2 parameters.
void build_neuron(Net& net, const ModelInput&, double) {
  int x = net.input(Shape{1});
  x = add_layer<FullyConnected>(net, x, "fc", 1, true, Init::xavier);
  x = add_layer<Sigmoid>(net, x, "sigmoid");
  add_layer<MeanSquaredError>(net, x, "loss");
}

// cuda-convnet "layers-18pct"-style CIFAR-10 net (85,098 parameters; no LRN: no LRN op):
//   conv1 5x5/32 pad 2 (3,32,32)->(32,32,32) -> maxpool 3 s2 -> (32,15,15) -> relu
//   conv2 5x5/32 pad 2 -> relu -> avgpool 3 s2 -> (32,7,7)
//   conv3 5x5/64 pad 2 -> relu -> avgpool 3 s2 -> (64,3,3)
//   fc 576 -> 10 -> softmax cross-entropy
void build_alexnet_cifar(Net& net, const ModelInput&, double) {
  int x = net.input(Shape{3, 32, 32});
  // conv1 is followed by max pooling, then ReLU: relu(maxpool(x)) == maxpool(relu(x)), so He.
  x = add_layer<Conv2d>(net, x, "conv1", 32, 5, 1, 2);
  x = add_layer<Pool2d>(net, x, "pool1", PoolKind::max, 3, 2);
  x = add_layer<Relu>(net, x, "relu1");
  x = add_layer<Conv2d>(net, x, "conv2", 32, 5, 1, 2);
  x = add_layer<Relu>(net, x, "relu2");
  x = add_layer<Pool2d>(net, x, "pool2", PoolKind::avg, 3, 2);
  x = add_layer<Conv2d>(net, x, "conv3", 64, 5, 1, 2);
  x = add_layer<Relu>(net, x, "relu3");
  x = add_layer<Pool2d>(net, x, "pool3", PoolKind::avg, 3, 2);
  x = add_layer<FullyConnected>(net, x, "fc", 10, true, Init::xavier);
  add_layer<SoftmaxCrossEntropy>(net, x, "loss");
}

// conv3x3 (no bias) + BN [+ ReLU]
int conv_bn(Net& net, int x, const std::string& name, int64_t channels, int64_t stride,
            bool relu) {
  x = add_layer<Conv2d>(net, x, name, channels, 3, stride, 1, false, Init::he);
  x = add_layer<BatchNorm>(net, x, name + "_bn");
  if (relu) x = add_layer<Relu>(net, x, name + "_relu");
  return x;
}

// One basic block: conv3x3-BN-ReLU-conv3x3-BN + shortcut, ReLU after the add. The shortcut is
// a 1x1 conv (stride s, no bias) + BN where the shape changes, the identity otherwise.
int basic_block(Net& net, int x, const std::string& name, int64_t channels, int64_t stride) {
  const Shape in = net.node_shape(x);
  int y = conv_bn(net, x, name + "_conv1", channels, stride, true);
  y = conv_bn(net, y, name + "_conv2", channels, 1, false);
  int shortcut = x;
  if (stride != 1 || in[0] != channels) {
    shortcut = add_layer<Conv2d>(net, x, name + "_proj", channels, 1, stride, 0, false, Init::xavier);
    shortcut = add_layer<BatchNorm>(net, shortcut, name + "_proj_bn");
  }
  int sum = net.add(std::make_unique<Add>(name + "_add"), {y, shortcut});
  return add_layer<Relu>(net, sum, name + "_relu");
}

// He et al. 2016 CIFAR ResNet-20 with projection shortcuts (272,474 trainable parameters):
//   conv 3x3/16 + BN + ReLU (16,32,32); stages of 3 basic blocks with 16, 32, 64 channels
//   (stride 2 in the first block of stages 2 and 3: 32x32 -> 16x16 -> 8x8); global average
//   pool (64,1,1); fc 64 -> 10; softmax cross-entropy.
void build_resnet20(Net& net, const ModelInput&, double) {
  int x = net.input(Shape{3, 32, 32});
  x = conv_bn(net, x, "conv1", 16, 1, true);
  const int64_t widths[3] = {16, 32, 64};
  for (int stage = 0; stage < 3; ++stage)
    for (int block = 0; block < 3; ++block) {
      const int64_t stride = stage > 0 && block == 0 ? 2 : 1;
      const std::string name = "s" + std::to_string(stage + 1) + "b" + std::to_string(block + 1);
      x = basic_block(net, x, name, widths[stage], stride);
    }
  x = add_layer<GlobalAvgPool>(net, x, "gap");
  x = add_layer<FullyConnected>(net, x, "fc", 10, true, Init::xavier);
  add_layer<SoftmaxCrossEntropy>(net, x, "loss");
}

// One model of the registry, by named fields (designated initializers below).
struct ModelEntry {
  const char* name = "";
  ModelInput input;                // the input the model expects
  bool any_input = false;          // takes whatever the data set gives (mlp)
  bool classifier = true;          // softmax cross-entropy (false: MSE regression)
  bool has_dropout = false;        // has dropout sites (the `dropout` key applies)
  void (*build)(Net&, const ModelInput&, double) = nullptr;
};

const std::vector<ModelEntry>& registry() {
  static const std::vector<ModelEntry> entries = {
      {.name = "lenet", .input = {Shape{1, 28, 28}, 10}, .has_dropout = true, .build = build_lenet},
      {.name = "mlp", .input = {Shape{1, 28, 28}, 10}, .any_input = true, .has_dropout = true, .build = build_mlp},
      {.name = "neuron", .input = {Shape{1}, 1}, .classifier = false, .build = build_neuron},
      {.name = "alexnet_cifar", .input = {Shape{3, 32, 32}, 10}, .build = build_alexnet_cifar},
      {.name = "resnet20", .input = {Shape{3, 32, 32}, 10}, .build = build_resnet20},
      // ImageNet zoo (nn/models/*.cpp): torchvision's architectures, 1000 classes.
      {.name = "resnet50", .input = {Shape{3, 224, 224}, 1000}, .build = zoo::build_resnet50},
      {.name = "vgg16", .input = {Shape{3, 224, 224}, 1000}, .has_dropout = true, .build = zoo::build_vgg16},
      {.name = "alexnet", .input = {Shape{3, 224, 224}, 1000}, .has_dropout = true, .build = zoo::build_alexnet},
      {.name = "mobilenet_v2", .input = {Shape{3, 224, 224}, 1000}, .has_dropout = true,
       .build = zoo::build_mobilenet_v2},
      {.name = "inception_v3", .input = {Shape{3, 299, 299}, 1000}, .has_dropout = true,
       .build = zoo::build_inception_v3},
  };
  return entries;
}

void no_dropout(const std::string& model, double dropout) {
  if (dropout == 0.0) return;
  std::string with_dropout;
  for (const ModelEntry& entry : registry())
    if (entry.has_dropout) with_dropout += (with_dropout.empty() ? "" : ", ") + std::string(entry.name);
  throw ConfigError("model " + model + " has no dropout layer; dropout must be 0 (got " +
                    std::to_string(dropout) + "); models with dropout: " + with_dropout);
}

const ModelEntry& find_model(const std::string& name) {
  for (const ModelEntry& entry : registry())
    if (entry.name == name) return entry;
  throw ConfigError("unknown model '" + name + "'; known models: " + join(model_names()));
}

}  // namespace

std::vector<std::string> model_names() {
  std::vector<std::string> names;
  for (const ModelEntry& entry : registry()) names.emplace_back(entry.name);
  return names;
}

ModelInput model_expected_input(const std::string& name) { return find_model(name).input; }

std::unique_ptr<Net> build_model_graph(const std::string& name, Backend& backend, const ModelInput& input,
                                       double dropout) {
  const ModelEntry& entry = find_model(name);
  if (entry.any_input) {
    if (input.sample.rank() < 1 || input.sample.numel() < 1 || input.outputs < 1)
      throw ConfigError("model " + name + " needs a non-empty input and at least one class; got " +
                        input.sample.str() + " with " + std::to_string(input.outputs) + " classes");
  } else {
    expect_input(name, entry.input, input, entry.classifier);
  }
  if (!(dropout >= 0.0 && dropout < 1.0))
    throw ConfigError("dropout must be in [0, 1), got " + std::to_string(dropout));
  if (!entry.has_dropout) no_dropout(name, dropout);
  auto net = std::make_unique<Net>(backend);
  entry.build(*net, input, dropout);
  return net;
}

std::unique_ptr<Net> build_model(const std::string& name, Backend& backend, const ModelInput& input,
                                 uint64_t seed, double dropout) {
  std::unique_ptr<Net> net = build_model_graph(name, backend, input, dropout);
  net->finalize(seed);
  return net;
}

}  // namespace ts
