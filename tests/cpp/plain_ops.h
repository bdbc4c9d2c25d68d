// Test helper: one backend op on plain fp32 host vectors in one call. Each call plans the op
// with plain descs (inputs plain, outputs requested plain, so the backend converts at the edges
// as it must for any caller) and executes it once. For host-accessible backends (ref, cpu).
// Backward calls plan a fresh op, so nothing a forward converted is reused: each checks the op
// from scratch.
#pragma once

#include <cstdint>
#include <vector>

#include "backend/backend.h"

namespace ts::plain {

inline Tensor t(const float* data, Shape dims) { return Tensor(const_cast<float*>(data), TensorDesc::plain(std::move(dims))); }
inline Shape conv_src(const ConvDesc& d) { return Shape{d.mb, d.ic, d.ih, d.iw}; }
inline Shape conv_dst(const ConvDesc& d) { return Shape{d.mb, d.oc, d.oh(), d.ow()}; }

inline void conv_forward(Backend& b, const ConvDesc& d, const float* src, const float* wei, const float* bia, float* dst) {
  auto op = b.plan_conv(d, TensorDesc::plain(conv_src(d)), TensorDesc::plain(conv_dst(d)));
  op->forward(t(src, conv_src(d)), wei, bia, t(dst, conv_dst(d)));
}
// diff_wei, diff_bia (null without bias) and, when diff_src is not null, diff_src.
inline void conv_backward(Backend& b, const ConvDesc& d, const float* src, const float* diff_dst, const float* wei,
                          float* diff_src, float* diff_wei, float* diff_bia) {
  auto op = b.plan_conv(d, TensorDesc::plain(conv_src(d)), TensorDesc::plain(conv_dst(d)));
  op->backward(t(src, conv_src(d)), t(diff_dst, conv_dst(d)), wei,
               diff_src ? t(diff_src, conv_src(d)) : Tensor(), diff_wei, diff_bia);
}

inline void fc_forward(Backend& b, const FcDesc& d, const float* src, const float* wei, const float* bia, float* dst) {
  auto op = b.plan_fc(d, TensorDesc::plain(Shape{d.mb, d.ic}), TensorDesc::plain(Shape{d.mb, d.oc}));
  op->forward(t(src, Shape{d.mb, d.ic}), wei, bia, t(dst, Shape{d.mb, d.oc}));
}
inline void fc_backward(Backend& b, const FcDesc& d, const float* src, const float* diff_dst, const float* wei,
                        float* diff_src, float* diff_wei, float* diff_bia) {
  auto op = b.plan_fc(d, TensorDesc::plain(Shape{d.mb, d.ic}), TensorDesc::plain(Shape{d.mb, d.oc}));
  op->backward(t(src, Shape{d.mb, d.ic}), t(diff_dst, Shape{d.mb, d.oc}), wei,
               diff_src ? t(diff_src, Shape{d.mb, d.ic}) : Tensor(), diff_wei, diff_bia);
}

// Pooling: forward and backward with one op (the backward needs its forward's workspace).
struct Pool {
  Pool(Backend& b, const PoolDesc& d)
      : d_(d),
        op_(b.plan_pool(d, TensorDesc::plain(src_dims()), TensorDesc::plain(dst_dims()))),
        workspace_(op_->workspace_bytes() + 1) {}
  void forward(const float* src, float* dst) { op_->forward(t(src, src_dims()), t(dst, dst_dims()), workspace_.data()); }
  void backward(const float* diff_dst, float* diff_src) {
    op_->backward(t(diff_dst, dst_dims()), workspace_.data(), t(diff_src, src_dims()));
  }
  size_t workspace_bytes() const { return op_->workspace_bytes(); }
  Shape src_dims() const { return Shape{d_.mb, d_.c, d_.ih, d_.iw}; }
  Shape dst_dims() const { return Shape{d_.mb, d_.c, d_.oh(), d_.ow()}; }

  PoolDesc d_;
  std::unique_ptr<PoolOp> op_;
  std::vector<unsigned char> workspace_;
};

inline Shape bn_dims(const BnDesc& d) { return Shape{d.mb, d.c, d.h, d.w}; }
inline void batchnorm_forward_training(Backend& b, const BnDesc& d, const float* src, const float* scale,
                                       const float* shift, float* dst, float* mean, float* variance) {
  auto op = b.plan_batchnorm(d, TensorDesc::plain(bn_dims(d)), TensorDesc::plain(bn_dims(d)));
  op->forward_training(t(src, bn_dims(d)), scale, shift, t(dst, bn_dims(d)), mean, variance);
}
inline void batchnorm_forward_inference(Backend& b, const BnDesc& d, const float* src, const float* scale,
                                        const float* shift, const float* mean, const float* variance, float* dst) {
  auto op = b.plan_batchnorm(d, TensorDesc::plain(bn_dims(d)), TensorDesc::plain(bn_dims(d)));
  op->forward_inference(t(src, bn_dims(d)), scale, shift, mean, variance, t(dst, bn_dims(d)));
}
inline void batchnorm_backward(Backend& b, const BnDesc& d, const float* src, const float* diff_dst,
                               const float* scale, const float* mean, const float* variance, float* diff_src,
                               float* diff_scale, float* diff_shift) {
  auto op = b.plan_batchnorm(d, TensorDesc::plain(bn_dims(d)), TensorDesc::plain(bn_dims(d)));
  op->backward(t(src, bn_dims(d)), t(diff_dst, bn_dims(d)), scale, mean, variance, t(diff_src, bn_dims(d)),
               diff_scale, diff_shift);
}

inline void eltwise_forward(Backend& b, const EltwiseDesc& d, const float* src, float* dst) {
  auto op = b.plan_eltwise(d, TensorDesc::plain(Shape{d.n}), TensorDesc::plain(Shape{d.n}));
  op->forward(t(src, Shape{d.n}), t(dst, Shape{d.n}));
}
inline void eltwise_backward(Backend& b, const EltwiseDesc& d, const float* src, const float* dst,
                             const float* diff_dst, float* diff_src) {
  auto op = b.plan_eltwise(d, TensorDesc::plain(Shape{d.n}), TensorDesc::plain(Shape{d.n}));
  op->backward(t(src, Shape{d.n}), t(dst, Shape{d.n}), t(diff_dst, Shape{d.n}), t(diff_src, Shape{d.n}));
}

inline void add(Backend& b, int64_t n, const float* a, const float* c, float* dst, bool relu = false) {
  auto op = b.plan_add(TensorDesc::plain(Shape{n}), TensorDesc::plain(Shape{n}), relu);
  op->forward(t(a, Shape{n}), t(c, Shape{n}), t(dst, Shape{n}));
}

// srcs[i] (mb, channels[i], hw) -> dst (mb, sum channels, hw), and back.
inline std::vector<TensorDesc> concat_descs(int64_t mb, int64_t hw, const std::vector<int64_t>& channels) {
  std::vector<TensorDesc> descs;
  for (int64_t c : channels) descs.push_back(TensorDesc::plain(Shape{mb, c, hw}));
  return descs;
}
inline void concat_forward(Backend& b, int64_t mb, int64_t hw, const std::vector<int64_t>& channels,
                           const std::vector<const float*>& srcs, float* dst) {
  int64_t total = 0;
  for (int64_t c : channels) total += c;
  auto op = b.plan_concat(concat_descs(mb, hw, channels), TensorDesc::plain(Shape{mb, total, hw}));
  std::vector<Tensor> in;
  for (size_t i = 0; i < srcs.size(); ++i) in.push_back(t(srcs[i], Shape{mb, channels[i], hw}));
  op->forward(in, t(dst, Shape{mb, total, hw}));
}
inline void concat_backward(Backend& b, int64_t mb, int64_t hw, const std::vector<int64_t>& channels,
                            const float* diff_dst, const std::vector<float*>& diff_srcs) {
  int64_t total = 0;
  for (int64_t c : channels) total += c;
  auto op = b.plan_concat(concat_descs(mb, hw, channels), TensorDesc::plain(Shape{mb, total, hw}));
  std::vector<Tensor> out;
  for (size_t i = 0; i < diff_srcs.size(); ++i)
    out.push_back(diff_srcs[i] ? t(diff_srcs[i], Shape{mb, channels[i], hw}) : Tensor());
  op->backward(t(diff_dst, Shape{mb, total, hw}), out);
}

inline void dropout_apply(Backend& b, int64_t n, const uint8_t* mask, float scale, const float* src, float* dst) {
  auto op = b.plan_dropout(TensorDesc::plain(Shape{n}));
  op->forward(mask, scale, t(src, Shape{n}), t(dst, Shape{n}));
}

inline float softmax_xent_forward(Backend& b, int64_t mb, int64_t classes, const float* logits,
                                  const int32_t* labels, float* probs) {
  auto op = b.plan_softmax_xent(TensorDesc::plain(Shape{mb, classes}));
  float loss = 0;
  op->forward(t(logits, Shape{mb, classes}), labels, probs, &loss);
  return loss;
}
inline void softmax_xent_backward(Backend& b, int64_t mb, int64_t classes, const float* probs, const int32_t* labels,
                                  float* diff_logits) {
  auto op = b.plan_softmax_xent(TensorDesc::plain(Shape{mb, classes}));
  op->backward(probs, labels, 1.0f, t(diff_logits, Shape{mb, classes}));
}

inline float mse_forward(Backend& b, int64_t n, const float* pred, const float* target) {
  auto op = b.plan_mse(TensorDesc::plain(Shape{n}));
  float loss = 0;
  op->forward(t(pred, Shape{n}), target, &loss);
  return loss;
}
inline void mse_backward(Backend& b, int64_t n, const float* pred, const float* target, float* diff_pred) {
  auto op = b.plan_mse(TensorDesc::plain(Shape{n}));
  op->backward(t(pred, Shape{n}), target, 1.0f, t(diff_pred, Shape{n}));
}

}  // namespace ts::plain
