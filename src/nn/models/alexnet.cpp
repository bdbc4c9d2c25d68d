// AlexNet, the one-tower variant of torchvision.models.alexnet (61,100,840 parameters; from
// Krizhevsky's "One weird trick" paper: 64, 192, 384, 256, 256 channels, no LRN):
//   conv1 11x11/64 s4 p2 + ReLU (64,55,55) -> maxpool 3x3 s2 (64,27,27)
//   conv2 5x5/192 p2 + ReLU (192,27,27)    -> maxpool 3x3 s2 (192,13,13)
//   conv3 3x3/384 p1 + ReLU, conv4 3x3/256 p1 + ReLU, conv5 3x3/256 p1 + ReLU (256,13,13)
//   -> maxpool 3x3 s2 (256,6,6)
//   [dropout] fc6 9216 -> 4096 + ReLU, [dropout] fc7 4096 -> 4096 + ReLU, fc8 4096 -> 1000
// Input 3x224x224, 1000 classes.
#include "nn/models/zoo.h"

namespace ts::zoo {

// torchvision's adaptive average pool to 6x6 is the identity on 224x224 input (pool5 already
// gives 256x6x6), so it is left out. Dropout comes before fc6 and fc7, as in torchvision.
void build_alexnet(Net& net, const ModelInput& in, double dropout) {
  int x = net.input(in.sample);
  x = add_layer<Conv2d>(net, x, "conv1", 64, 11, 4, 2, true, Init::he);
  x = add_layer<Relu>(net, x, "relu1");
  x = add_layer<Pool2d>(net, x, "pool1", PoolKind::max, 3, 2);
  x = add_layer<Conv2d>(net, x, "conv2", 192, 5, 1, 2, true, Init::he);
  x = add_layer<Relu>(net, x, "relu2");
  x = add_layer<Pool2d>(net, x, "pool2", PoolKind::max, 3, 2);
  x = add_layer<Conv2d>(net, x, "conv3", 384, 3, 1, 1, true, Init::he);
  x = add_layer<Relu>(net, x, "relu3");
  x = add_layer<Conv2d>(net, x, "conv4", 256, 3, 1, 1, true, Init::he);
  x = add_layer<Relu>(net, x, "relu4");
  x = add_layer<Conv2d>(net, x, "conv5", 256, 3, 1, 1, true, Init::he);
  x = add_layer<Relu>(net, x, "relu5");
  x = add_layer<Pool2d>(net, x, "pool5", PoolKind::max, 3, 2);
  if (dropout > 0) x = add_layer<Dropout>(net, x, "drop6", dropout);
  x = add_layer<FullyConnected>(net, x, "fc6", 4096);
  x = add_layer<Relu>(net, x, "relu6");
  if (dropout > 0) x = add_layer<Dropout>(net, x, "drop7", dropout);
  x = add_layer<FullyConnected>(net, x, "fc7", 4096);
  x = add_layer<Relu>(net, x, "relu7");
  x = add_layer<FullyConnected>(net, x, "fc8", in.outputs, true, Init::xavier);
  add_layer<SoftmaxCrossEntropy>(net, x, "loss");
}

}  // namespace ts::zoo
