// Named problem descriptors for backend ops. Each prints as a string that appears in logs,
// HDF5 layer tables and test failure messages, and parses back (round-trips), e.g.
//   conv:mb128_ic32oc64_ih14iw14_kh5kw5_sh1sw1_ph2pw2_g1 (_relu: with a fused ReLU)
#pragma once

#include <cstdint>
#include <string>
#include <string_view>

namespace ts {

// Convolution. src (mb,ic,ih,iw), wei (oc, ic/g, kh, kw), bia (oc) -> dst (mb,oc,oh,ow).
struct ConvDesc {
  int64_t mb = 1, ic = 1, oc = 1, ih = 1, iw = 1, kh = 1, kw = 1;
  int64_t sh = 1, sw = 1, ph = 0, pw = 0, groups = 1;
  bool bias = true;
  // Fused ReLU: dst = relu(conv + bias) (the net fuses a conv whose only reader is a ReLU).
  // Backward is unchanged: the ReLU's own backward, from this dst, precedes conv's.
  bool relu = false;

  int64_t oh() const { return (ih + 2 * ph - kh) / sh + 1; }
  int64_t ow() const { return (iw + 2 * pw - kw) / sw + 1; }
  int64_t weight_count() const { return oc * (ic / groups) * kh * kw; }
  // Forward multiply-adds x 2 for the whole minibatch.
  int64_t flops() const { return 2 * mb * oc * oh() * ow() * (ic / groups) * kh * kw; }
  std::string str() const;
  static ConvDesc parse(std::string_view s);  // throws ConfigError on malformed text
  bool operator==(const ConvDesc&) const = default;
};

enum class PoolKind { max, avg };

// Pooling. src (mb,c,ih,iw) -> dst (mb,c,oh,ow). Average pooling excludes padding.
struct PoolDesc {
  PoolKind kind = PoolKind::max;
  int64_t mb = 1, c = 1, ih = 1, iw = 1, kh = 1, kw = 1, sh = 1, sw = 1, ph = 0, pw = 0;

  int64_t oh() const { return (ih + 2 * ph - kh) / sh + 1; }
  int64_t ow() const { return (iw + 2 * pw - kw) / sw + 1; }
  std::string str() const;  // pool:max_mb2c3_ih8iw8_kh2kw2_sh2sw2_ph0pw0
  static PoolDesc parse(std::string_view s);
  bool operator==(const PoolDesc&) const = default;
};

// Fully connected. src (mb, ic), wei (oc, ic), bia (oc) -> dst (mb, oc).
struct FcDesc {
  int64_t mb = 1, ic = 1, oc = 1;
  bool bias = true;
  int64_t flops() const { return 2 * mb * ic * oc; }
  std::string str() const;  // fc:mb64_ic3136oc512
  static FcDesc parse(std::string_view s);
  bool operator==(const FcDesc&) const = default;
};

// Batch normalisation over (mb, h, w) per channel. src/dst (mb,c,h,w); scale/shift/mean/var (c).
// `variance` is the biased batch variance (divide by mb*h*w), as oneDNN computes it.
struct BnDesc {
  int64_t mb = 1, c = 1, h = 1, w = 1;
  float eps = 1e-5f;
  // Fused ReLU: dst = relu(bn(src)) in both training and inference forward; backward as for conv.
  bool relu = false;
  std::string str() const;  // bn:mb2c16_h8w8[_relu]
  static BnDesc parse(std::string_view s);
  bool operator==(const BnDesc&) const = default;
};

// relu6 = min(max(src, 0), 6) (MobileNetV2).
enum class EltwiseKind { relu, relu6, sigmoid };
const char* eltwise_kind_name(EltwiseKind kind);  // "relu", "relu6", "sigmoid"

// Element-wise activation over n floats.
struct EltwiseDesc {
  EltwiseKind kind = EltwiseKind::relu;
  int64_t n = 1;
  std::string str() const;  // eltwise:relu_n100 (relu | relu6 | sigmoid)
  static EltwiseDesc parse(std::string_view s);
  bool operator==(const EltwiseDesc&) const = default;
};

}  // namespace ts
