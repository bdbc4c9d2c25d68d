// ImageNet model zoo builders (internal to nn/models.cpp): torchvision's architectures with
// torchvision's exact parameter counts, for synthetic-data throughput runs. Each builder adds the
// layers (loss included) to an empty Net; models.cpp checks the input and finalizes the net.
// Layer names follow torchvision's module paths where they are readable (layer3.2.conv2,
// Mixed_6b.branch7x7_2.conv); see docs/models.md for the tables and the differences.
#pragma once

#include <memory>
#include <string>
#include <utility>

#include "nn/layers.h"
#include "nn/models.h"
#include "nn/net.h"

namespace ts::zoo {

// `dropout` is the run's dropout probability at the model's dropout sites; 0 leaves them out
// (torchvision's defaults: 0.5 for vgg16, alexnet and inception_v3, 0.2 for mobilenet_v2).
void build_resnet50(Net& net, const ModelInput& in, double dropout);       // resnet_imagenet.cpp
void build_vgg16(Net& net, const ModelInput& in, double dropout);          // vgg.cpp
void build_alexnet(Net& net, const ModelInput& in, double dropout);        // alexnet.cpp
void build_mobilenet_v2(Net& net, const ModelInput& in, double dropout);   // mobilenet_v2.cpp
void build_inception_v3(Net& net, const ModelInput& in, double dropout);   // inception_v3.cpp

// Adds layer L(args...) reading node `src`; returns the new node id.
template <typename L, typename... Args>
int add_layer(Net& net, int src, Args&&... args) {
  return net.add(std::make_unique<L>(std::forward<Args>(args)...), {src});
}

// fc<id> (`width` outputs) -> relu<id> [-> drop<id>]: a hidden layer of a classifier (mlp, vgg16).
inline int fc_relu_dropout(Net& net, int src, const std::string& id, int64_t width, double dropout) {
  int x = add_layer<FullyConnected>(net, src, "fc" + id, width);
  x = add_layer<Relu>(net, x, "relu" + id);
  return dropout > 0 ? add_layer<Dropout>(net, x, "drop" + id, dropout) : x;
}

// Conv2d options for a kh x kw kernel, stride s, padding (ph, pw), no bias (followed by BN).
inline Conv2dOptions conv_options(int64_t out_channels, int64_t kh, int64_t kw, int64_t stride,
                                  int64_t ph, int64_t pw, Init init = Init::he) {
  return {.out_channels = out_channels, .kh = kh, .kw = kw, .sh = stride, .sw = stride, .ph = ph, .pw = pw,
          .bias = false, .init = init};
}

}  // namespace ts::zoo
