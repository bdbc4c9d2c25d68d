// ResNet-50 v1.5 for ImageNet, as torchvision.models.resnet50 (25,557,032 parameters):
// bottleneck blocks with the stride in the 3x3 convolution (v1.5), convolutions without bias,
// each followed by BN, projection shortcuts (1x1 conv + BN, "downsample") where the shape
// changes. Input 3x224x224, 1000 classes.
#include "nn/models/zoo.h"

namespace ts::zoo {
namespace {

// conv (no bias) -> BN [-> ReLU]; the names are <prefix>conv<i>, <prefix>bn<i>, <prefix>relu<i>.
int conv_bn(Net& net, int x, const std::string& prefix, const std::string& index,
            int64_t channels, int64_t kernel, int64_t stride, bool relu) {
  const int64_t pad = kernel / 2;
  x = add_layer<Conv2d>(net, x, prefix + "conv" + index,
                        conv_options(channels, kernel, kernel, stride, pad, pad));
  x = add_layer<BatchNorm>(net, x, prefix + "bn" + index);
  if (relu) x = add_layer<Relu>(net, x, prefix + "relu" + index);
  return x;
}

// Bottleneck (expansion 4): 1x1 -> width, 3x3 stride s -> width, 1x1 -> 4 width; the shortcut
// is the identity or downsample.0 (1x1 stride s, no bias) + downsample.1 (BN); ReLU after the add.
// src (C,H,W) -> dst (4 width, H/s, W/s)
int bottleneck(Net& net, int x, const std::string& name, int64_t width, int64_t stride) {
  const int64_t out_channels = 4 * width;
  const Shape in = net.node_shape(x);
  const std::string prefix = name + ".";
  int y = conv_bn(net, x, prefix, "1", width, 1, 1, true);
  y = conv_bn(net, y, prefix, "2", width, 3, stride, true);
  y = conv_bn(net, y, prefix, "3", out_channels, 1, 1, false);
  int shortcut = x;
  if (stride != 1 || in[0] != out_channels) {
    shortcut = add_layer<Conv2d>(net, x, prefix + "downsample.0",
                                 conv_options(out_channels, 1, 1, stride, 0, 0, Init::xavier));
    shortcut = add_layer<BatchNorm>(net, shortcut, prefix + "downsample.1");
  }
  int sum = net.add(std::make_unique<Add>(prefix + "add"), {y, shortcut});
  return add_layer<Relu>(net, sum, prefix + "relu");
}

}  // namespace

// stem: conv1 7x7/64 s2 p3 + BN + ReLU (64,112,112) -> maxpool 3x3 s2 p1 (64,56,56)
// layer1: 3 bottlenecks, width 64  -> (256,56,56)
// layer2: 4 bottlenecks, width 128, stride 2 in the first -> (512,28,28)
// layer3: 6 bottlenecks, width 256, stride 2 in the first -> (1024,14,14)
// layer4: 3 bottlenecks, width 512, stride 2 in the first -> (2048,7,7)
// head: global average pool (2048) -> fc 2048 -> 1000 -> softmax cross-entropy
void build_resnet50(Net& net, const ModelInput& in, double) {
  int x = net.input(in.sample);
  x = add_layer<Conv2d>(net, x, "conv1", conv_options(64, 7, 7, 2, 3, 3));
  x = add_layer<BatchNorm>(net, x, "bn1");
  x = add_layer<Relu>(net, x, "relu");
  x = add_layer<Pool2d>(net, x, "maxpool", PoolKind::max, 3, 2, 1);
  const int blocks[4] = {3, 4, 6, 3};
  const int64_t widths[4] = {64, 128, 256, 512};
  for (int stage = 0; stage < 4; ++stage)
    for (int block = 0; block < blocks[stage]; ++block) {
      const int64_t stride = stage > 0 && block == 0 ? 2 : 1;
      const std::string name = "layer" + std::to_string(stage + 1) + "." + std::to_string(block);
      x = bottleneck(net, x, name, widths[stage], stride);
    }
  x = add_layer<GlobalAvgPool>(net, x, "avgpool");
  x = add_layer<FullyConnected>(net, x, "fc", in.outputs, true, Init::xavier);
  add_layer<SoftmaxCrossEntropy>(net, x, "loss");
}

}  // namespace ts::zoo
