// VGG-16 (configuration D, no batch norm), as torchvision.models.vgg16 (138,357,544
// parameters): thirteen 3x3 convolutions with bias and ReLU in five stages with 2x2 max
// pooling, then the classifier fc6 25088 -> 4096, fc7 4096 -> 4096, fc8 4096 -> 1000 with
// ReLU and dropout after fc6 and fc7. Input 3x224x224, 1000 classes.
#include "nn/models/zoo.h"

namespace ts::zoo {

// torchvision's adaptive average pool to 7x7 is the identity on 224x224 input (the features
// are already 512x7x7), so it is left out.
void build_vgg16(Net& net, const ModelInput& in, double dropout) {
  int x = net.input(in.sample);
  // stage s: `convs` 3x3 convolutions (pad 1, bias) with `channels` outputs, then maxpool 2x2 s2
  struct Stage {
    int convs;
    int64_t channels;
  };
  const Stage stages[5] = {{2, 64}, {2, 128}, {3, 256}, {3, 512}, {3, 512}};
  for (int s = 0; s < 5; ++s) {
    for (int c = 0; c < stages[s].convs; ++c) {
      const std::string id = std::to_string(s + 1) + "_" + std::to_string(c + 1);
      x = add_layer<Conv2d>(net, x, "conv" + id, stages[s].channels, 3, 1, 1, true, Init::he);
      x = add_layer<Relu>(net, x, "relu" + id);
    }
    x = add_layer<Pool2d>(net, x, "pool" + std::to_string(s + 1), PoolKind::max, 2, 2);
  }
  // (512,7,7) -> fc6 -> fc7 -> fc8 (the fully connected layers flatten implicitly)
  x = fc_relu_dropout(net, x, "6", 4096, dropout);
  x = fc_relu_dropout(net, x, "7", 4096, dropout);
  x = add_layer<FullyConnected>(net, x, "fc8", in.outputs, true, Init::xavier);
  add_layer<SoftmaxCrossEntropy>(net, x, "loss");
}

}  // namespace ts::zoo
