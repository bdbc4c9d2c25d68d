// The reference kernels: naive, obviously-correct loops for every op of the backend table on
// plain fp32 arrays (row-major NCHW), accumulating in double. They are the test oracle for
// every other backend (tests call them directly) and what the ref backend executes; never the
// fast path. Shapes follow the descriptors (backend/descriptors.h).
#pragma once

#include <cstddef>
#include <cstdint>
#include <vector>

#include "backend/descriptors.h"

namespace ts::ref {

// src (mb,ic,ih,iw), wei (oc,ic/g,kh,kw), bia (oc) or null -> dst (mb,oc,oh,ow) [relu'd if d.relu]
void conv_forward(const ConvDesc& d, const float* src, const float* wei, const float* bia, float* dst);
void conv_backward_data(const ConvDesc& d, const float* diff_dst, const float* wei, float* diff_src);
// diff_bia may be null when d.bias is false.
void conv_backward_weights(const ConvDesc& d, const float* src, const float* diff_dst,
                           float* diff_wei, float* diff_bia);

// Max pooling workspace: one int32 per dst element, the argmax as iy * iw + ix (the offset
// inside its (n,c) input plane); 0 bytes for average pooling (which excludes padding).
size_t pool_workspace_bytes(const PoolDesc& d);
void pool_forward(const PoolDesc& d, const float* src, float* dst, void* workspace);
void pool_backward(const PoolDesc& d, const float* diff_dst, const void* workspace, float* diff_src);

// src (mb,ic), wei (oc,ic), bia (oc) or null -> dst (mb,oc)
void fc_forward(const FcDesc& d, const float* src, const float* wei, const float* bia, float* dst);
void fc_backward_data(const FcDesc& d, const float* diff_dst, const float* wei, float* diff_src);
void fc_backward_weights(const FcDesc& d, const float* src, const float* diff_dst, float* diff_wei,
                         float* diff_bia);

// src/dst (mb,c,h,w); scale, shift, mean, variance (c); variance biased.
void batchnorm_forward_training(const BnDesc& d, const float* src, const float* scale,
                                const float* shift, float* dst, float* mean, float* variance);
void batchnorm_forward_inference(const BnDesc& d, const float* src, const float* scale,
                                 const float* shift, const float* mean, const float* variance,
                                 float* dst);
void batchnorm_backward(const BnDesc& d, const float* src, const float* diff_dst, const float* scale,
                        const float* mean, const float* variance, float* diff_src,
                        float* diff_scale, float* diff_shift);

// Over d.n values; backward gets the forward's src and dst.
void eltwise_forward(const EltwiseDesc& d, const float* src, float* dst);
void eltwise_backward(const EltwiseDesc& d, const float* src, const float* dst,
                      const float* diff_dst, float* diff_src);

// logits (mb,classes), labels (mb) -> probs (mb,classes); returns the mean of -log p[label].
float softmax_xent_forward(int64_t mb, int64_t classes, const float* logits, const int32_t* labels,
                           float* probs);
// diff_logits = (probs - onehot(labels)) / mb
void softmax_xent_backward(int64_t mb, int64_t classes, const float* probs, const int32_t* labels,
                           float* diff_logits);
// mean((pred - target)^2) over n values; backward 2 (pred - target) / n.
float mse_forward(int64_t n, const float* pred, const float* target);
void mse_backward(int64_t n, const float* pred, const float* target, float* diff_pred);
// x *= a over n values (the loss scale of fp16 training).
void scale(int64_t n, float a, float* x);

void add(int64_t n, const float* a, const float* b, float* dst);
void add_relu(int64_t n, const float* a, const float* b, float* dst);  // max(a + b, 0)

// srcs[i] (mb,channels[i],hw) -> dst (mb,sum channels,hw), and the inverse split (a null
// diff_srcs[i] skips that input).
void concat_forward(int64_t mb, int64_t hw, const std::vector<int64_t>& channels,
                    const std::vector<const float*>& srcs, float* dst);
void concat_backward(int64_t mb, int64_t hw, const std::vector<int64_t>& channels,
                     const float* diff_dst, const std::vector<float*>& diff_srcs);

// dst = src * mask * scale (mask 0/1 per element).
void dropout_apply(int64_t n, const uint8_t* mask, float scale, const float* src, float* dst);

// g' = g + wd * w;  v = momentum * v + g';  w -= lr * (nesterov ? g' + momentum * v : v)
void sgd_step(int64_t n, float lr, float momentum, float weight_decay, bool nesterov,
              float* weights, const float* grads, float* velocity);
// y = a * x + b * y
void axpby(int64_t n, float a, const float* x, float b, float* y);

}  // namespace ts::ref
