// Inception v3, as torchvision.models.inception_v3 with aux_logits=False (23,834,568
// parameters): every convolution is BasicConv2d = conv (no bias) + BN (eps 0.001) + ReLU; the
// Mixed_5 (A), 6a (B), 6b-6e (C, factorised 1x7/7x1), 7a (D) and 7b/7c (E, split 1x3/3x1)
// blocks concatenate their branches along channels. Input 3x299x299, 1000 classes.
//
// Difference from torchvision: the 3x3 stride-1 average pools in the A, C and E blocks pad by 1
// and torchvision divides by 9 everywhere (count_include_pad=True); this backend's average
// pooling divides by the number of in-image elements (excludes padding). Outputs differ on the
// border pixels only; shapes, parameters and FLOPs are the same. See docs/models.md.
#include "nn/models/zoo.h"

#include <vector>

namespace ts::zoo {
namespace {

// BasicConv2d with a kh x kw kernel, stride 1, padding (ph, pw), named <name>.conv, <name>.bn,
// <name>.relu. src (C,H,W) -> dst (out, OH, OW)
int basic_conv_hw(Net& net, int x, const std::string& name, int64_t out_channels, int64_t kh,
                  int64_t kw, int64_t ph, int64_t pw, int64_t stride = 1) {
  x = add_layer<Conv2d>(net, x, name + ".conv", conv_options(out_channels, kh, kw, stride, ph, pw));
  x = add_layer<BatchNorm>(net, x, name + ".bn", 1e-3f);
  return add_layer<Relu>(net, x, name + ".relu");
}

// BasicConv2d with a square kernel.
int basic_conv(Net& net, int x, const std::string& name, int64_t out_channels, int64_t kernel,
               int64_t stride, int64_t pad) {
  return basic_conv_hw(net, x, name, out_channels, kernel, kernel, pad, pad, stride);
}

int pool(Net& net, int x, const std::string& name, PoolKind kind, int64_t stride, int64_t pad) {
  return add_layer<Pool2d>(net, x, name, kind, 3, stride, pad);  // 3x3 window
}

int concat(Net& net, const std::string& name, std::vector<int> branches) {
  return net.add(std::make_unique<Concat>(name), std::move(branches));
}

// InceptionA: 1x1/64 | 1x1/48 -> 5x5/64 | 1x1/64 -> 3x3/96 -> 3x3/96 | avgpool 3x3 -> 1x1/pool
// (C,35,35) -> (224 + pool_features, 35, 35)
int inception_a(Net& net, int x, const std::string& n, int64_t pool_features) {
  int b1 = basic_conv(net, x, n + ".branch1x1", 64, 1, 1, 0);
  int b5 = basic_conv(net, x, n + ".branch5x5_1", 48, 1, 1, 0);
  b5 = basic_conv(net, b5, n + ".branch5x5_2", 64, 5, 1, 2);
  int b3 = basic_conv(net, x, n + ".branch3x3dbl_1", 64, 1, 1, 0);
  b3 = basic_conv(net, b3, n + ".branch3x3dbl_2", 96, 3, 1, 1);
  b3 = basic_conv(net, b3, n + ".branch3x3dbl_3", 96, 3, 1, 1);
  int bp = pool(net, x, n + ".avg_pool", PoolKind::avg, 1, 1);
  bp = basic_conv(net, bp, n + ".branch_pool", pool_features, 1, 1, 0);
  return concat(net, n + ".concat", {b1, b5, b3, bp});
}

// InceptionB (grid reduction): 3x3/384 s2 | 1x1/64 -> 3x3/96 -> 3x3/96 s2 | maxpool 3x3 s2
// (288,35,35) -> (768,17,17)
int inception_b(Net& net, int x, const std::string& n) {
  int b3 = basic_conv(net, x, n + ".branch3x3", 384, 3, 2, 0);
  int bd = basic_conv(net, x, n + ".branch3x3dbl_1", 64, 1, 1, 0);
  bd = basic_conv(net, bd, n + ".branch3x3dbl_2", 96, 3, 1, 1);
  bd = basic_conv(net, bd, n + ".branch3x3dbl_3", 96, 3, 2, 0);
  int bp = pool(net, x, n + ".max_pool", PoolKind::max, 2, 0);
  return concat(net, n + ".concat", {b3, bd, bp});
}

// InceptionC (factorised 7x7): 1x1/192 | 1x1/c7 -> 1x7/c7 -> 7x1/192 |
// 1x1/c7 -> 7x1/c7 -> 1x7/c7 -> 7x1/c7 -> 1x7/192 | avgpool 3x3 -> 1x1/192
// (768,17,17) -> (768,17,17)
int inception_c(Net& net, int x, const std::string& n, int64_t c7) {
  int b1 = basic_conv(net, x, n + ".branch1x1", 192, 1, 1, 0);
  int b7 = basic_conv(net, x, n + ".branch7x7_1", c7, 1, 1, 0);
  b7 = basic_conv_hw(net, b7, n + ".branch7x7_2", c7, 1, 7, 0, 3);
  b7 = basic_conv_hw(net, b7, n + ".branch7x7_3", 192, 7, 1, 3, 0);
  int bd = basic_conv(net, x, n + ".branch7x7dbl_1", c7, 1, 1, 0);
  bd = basic_conv_hw(net, bd, n + ".branch7x7dbl_2", c7, 7, 1, 3, 0);
  bd = basic_conv_hw(net, bd, n + ".branch7x7dbl_3", c7, 1, 7, 0, 3);
  bd = basic_conv_hw(net, bd, n + ".branch7x7dbl_4", c7, 7, 1, 3, 0);
  bd = basic_conv_hw(net, bd, n + ".branch7x7dbl_5", 192, 1, 7, 0, 3);
  int bp = pool(net, x, n + ".avg_pool", PoolKind::avg, 1, 1);
  bp = basic_conv(net, bp, n + ".branch_pool", 192, 1, 1, 0);
  return concat(net, n + ".concat", {b1, b7, bd, bp});
}

// InceptionD (grid reduction): 1x1/192 -> 3x3/320 s2 | 1x1/192 -> 1x7/192 -> 7x1/192 ->
// 3x3/192 s2 | maxpool 3x3 s2.  (768,17,17) -> (1280,8,8)
int inception_d(Net& net, int x, const std::string& n) {
  int b3 = basic_conv(net, x, n + ".branch3x3_1", 192, 1, 1, 0);
  b3 = basic_conv(net, b3, n + ".branch3x3_2", 320, 3, 2, 0);
  int b7 = basic_conv(net, x, n + ".branch7x7x3_1", 192, 1, 1, 0);
  b7 = basic_conv_hw(net, b7, n + ".branch7x7x3_2", 192, 1, 7, 0, 3);
  b7 = basic_conv_hw(net, b7, n + ".branch7x7x3_3", 192, 7, 1, 3, 0);
  b7 = basic_conv(net, b7, n + ".branch7x7x3_4", 192, 3, 2, 0);
  int bp = pool(net, x, n + ".max_pool", PoolKind::max, 2, 0);
  return concat(net, n + ".concat", {b3, b7, bp});
}

// InceptionE (expanded filter bank): 1x1/320 | 1x1/384 -> (1x3/384 , 3x1/384) |
// 1x1/448 -> 3x3/384 -> (1x3/384 , 3x1/384) | avgpool 3x3 -> 1x1/192
// (C,8,8) -> (2048,8,8)
int inception_e(Net& net, int x, const std::string& n) {
  int b1 = basic_conv(net, x, n + ".branch1x1", 320, 1, 1, 0);
  int b3 = basic_conv(net, x, n + ".branch3x3_1", 384, 1, 1, 0);
  int b3a = basic_conv_hw(net, b3, n + ".branch3x3_2a", 384, 1, 3, 0, 1);
  int b3b = basic_conv_hw(net, b3, n + ".branch3x3_2b", 384, 3, 1, 1, 0);
  b3 = concat(net, n + ".branch3x3_concat", {b3a, b3b});
  int bd = basic_conv(net, x, n + ".branch3x3dbl_1", 448, 1, 1, 0);
  bd = basic_conv(net, bd, n + ".branch3x3dbl_2", 384, 3, 1, 1);
  int bda = basic_conv_hw(net, bd, n + ".branch3x3dbl_3a", 384, 1, 3, 0, 1);
  int bdb = basic_conv_hw(net, bd, n + ".branch3x3dbl_3b", 384, 3, 1, 1, 0);
  bd = concat(net, n + ".branch3x3dbl_concat", {bda, bdb});
  int bp = pool(net, x, n + ".avg_pool", PoolKind::avg, 1, 1);
  bp = basic_conv(net, bp, n + ".branch_pool", 192, 1, 1, 0);
  return concat(net, n + ".concat", {b1, b3, bd, bp});
}

}  // namespace

// stem: (3,299,299) -> Conv2d_1a_3x3 s2 (32,149,149) -> Conv2d_2a_3x3 (32,147,147) ->
// Conv2d_2b_3x3 p1 (64,147,147) -> maxpool1 3x3 s2 (64,73,73) -> Conv2d_3b_1x1 (80,73,73) ->
// Conv2d_4a_3x3 (192,71,71) -> maxpool2 3x3 s2 (192,35,35)
// Mixed_5b/5c/5d (A): (256|288|288,35,35); Mixed_6a (B): (768,17,17);
// Mixed_6b-6e (C, c7 = 128,160,160,192): (768,17,17); Mixed_7a (D): (1280,8,8);
// Mixed_7b/7c (E): (2048,8,8); global average pool -> [dropout] -> fc 2048 -> 1000.
void build_inception_v3(Net& net, const ModelInput& in, double dropout) {
  int x = net.input(in.sample);
  x = basic_conv(net, x, "Conv2d_1a_3x3", 32, 3, 2, 0);
  x = basic_conv(net, x, "Conv2d_2a_3x3", 32, 3, 1, 0);
  x = basic_conv(net, x, "Conv2d_2b_3x3", 64, 3, 1, 1);
  x = pool(net, x, "maxpool1", PoolKind::max, 2, 0);
  x = basic_conv(net, x, "Conv2d_3b_1x1", 80, 1, 1, 0);
  x = basic_conv(net, x, "Conv2d_4a_3x3", 192, 3, 1, 0);
  x = pool(net, x, "maxpool2", PoolKind::max, 2, 0);
  x = inception_a(net, x, "Mixed_5b", 32);
  x = inception_a(net, x, "Mixed_5c", 64);
  x = inception_a(net, x, "Mixed_5d", 64);
  x = inception_b(net, x, "Mixed_6a");
  x = inception_c(net, x, "Mixed_6b", 128);
  x = inception_c(net, x, "Mixed_6c", 160);
  x = inception_c(net, x, "Mixed_6d", 160);
  x = inception_c(net, x, "Mixed_6e", 192);
  x = inception_d(net, x, "Mixed_7a");
  x = inception_e(net, x, "Mixed_7b");
  x = inception_e(net, x, "Mixed_7c");
  x = add_layer<GlobalAvgPool>(net, x, "avgpool");
  if (dropout > 0) x = add_layer<Dropout>(net, x, "dropout", dropout);
  x = add_layer<FullyConnected>(net, x, "fc", in.outputs, true, Init::xavier);
  add_layer<SoftmaxCrossEntropy>(net, x, "loss");
}

}  // namespace ts::zoo
