// MobileNetV2, width multiplier 1.0, as torchvision.models.mobilenet_v2 (3,504,872 parameters):
// a 3x3/32 stride-2 stem, 17 inverted residual blocks (1x1 expansion + ReLU6, 3x3 depthwise
// + ReLU6, linear 1x1 projection; BN after every convolution, none with bias; a residual add
// where stride is 1 and the channels match), a 1x1/1280 convolution, global average pooling,
// [dropout] and the classifier 1280 -> 1000. Input 3x224x224, 1000 classes.
#include "nn/models/zoo.h"

namespace ts::zoo {
namespace {

// conv (no bias) -> BN [-> ReLU6], named <name>, <name>_bn, <name>_relu6.
int conv_bn(Net& net, int x, const std::string& name, Conv2dOptions options, bool relu6) {
  x = add_layer<Conv2d>(net, x, name, options);
  x = add_layer<BatchNorm>(net, x, name + "_bn");
  if (relu6) x = add_layer<Relu6>(net, x, name + "_relu6");
  return x;
}

// Inverted residual: [expand 1x1 -> C*t + ReLU6] -> depthwise 3x3 stride s + ReLU6 -> project
// 1x1 -> out (linear, Xavier) [+ src when stride 1 and C == out].
// src (C,H,W) -> dst (out, H/s, W/s)
int inverted_residual(Net& net, int x, const std::string& name, int64_t expand_ratio,
                      int64_t out_channels, int64_t stride) {
  const int64_t in_channels = net.node_shape(x)[0];
  const int64_t hidden = in_channels * expand_ratio;
  int y = x;
  if (expand_ratio != 1) y = conv_bn(net, y, name + ".expand", conv_options(hidden, 1, 1, 1, 0, 0), true);
  Conv2dOptions depthwise = conv_options(hidden, 3, 3, stride, 1, 1);
  depthwise.groups = hidden;
  y = conv_bn(net, y, name + ".dw", depthwise, true);
  y = conv_bn(net, y, name + ".project", conv_options(out_channels, 1, 1, 1, 0, 0, Init::xavier),
              false);
  if (stride == 1 && in_channels == out_channels)
    y = net.add(std::make_unique<Add>(name + ".add"), {y, x});
  return y;
}

}  // namespace

// Blocks (torchvision's inverted_residual_setting): expansion t, channels c, repeats n, stride
// s of the first repeat:
//   t c   n s   output
//   1 16  1 1   (16,112,112)
//   6 24  2 2   (24,56,56)
//   6 32  3 2   (32,28,28)
//   6 64  4 2   (64,14,14)
//   6 96  3 1   (96,14,14)
//   6 160 3 2   (160,7,7)
//   6 320 1 1   (320,7,7)
// Blocks are named features.1 ... features.17 as in torchvision; the stem is features.0 and the
// last 1x1 convolution features.18.
void build_mobilenet_v2(Net& net, const ModelInput& in, double dropout) {
  int x = net.input(in.sample);
  x = conv_bn(net, x, "features.0.conv", conv_options(32, 3, 3, 2, 1, 1), true);
  struct Setting {
    int64_t t, c, n, s;
  };
  const Setting settings[7] = {{1, 16, 1, 1}, {6, 24, 2, 2},  {6, 32, 3, 2}, {6, 64, 4, 2},
                               {6, 96, 3, 1}, {6, 160, 3, 2}, {6, 320, 1, 1}};
  int index = 1;
  for (const Setting& setting : settings)
    for (int64_t i = 0; i < setting.n; ++i, ++index)
      x = inverted_residual(net, x, "features." + std::to_string(index), setting.t, setting.c,
                            i == 0 ? setting.s : 1);
  x = conv_bn(net, x, "features.18.conv", conv_options(1280, 1, 1, 1, 0, 0), true);
  x = add_layer<GlobalAvgPool>(net, x, "avgpool");
  if (dropout > 0) x = add_layer<Dropout>(net, x, "classifier.dropout", dropout);
  x = add_layer<FullyConnected>(net, x, "classifier.fc", in.outputs, true, Init::xavier);
  add_layer<SoftmaxCrossEntropy>(net, x, "loss");
}

}  // namespace ts::zoo
