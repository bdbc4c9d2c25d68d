// The reference kernels (see ref_kernels.h): every op written as the textbook loop nest on plain
// fp32 arrays, accumulating in double. Clarity over speed: the fast backends are tested against
// these.
#include "backend/ref/ref_kernels.h"

#include <algorithm>
#include <cmath>
#include <vector>

#include "core/error.h"

namespace ts::ref {

// ---- convolution ----------------------------------------------------------------------------
// Index helpers: src/diff_src (mb,ic,ih,iw), wei/diff_wei (oc,icg,kh,kw), dst/diff_dst (mb,oc,oh,ow)
namespace {
struct ConvIndex {
  const ConvDesc& d;
  int64_t icg() const { return d.ic / d.groups; }
  int64_t ocg() const { return d.oc / d.groups; }
  size_t src(int64_t n, int64_t c, int64_t h, int64_t w) const {
    return static_cast<size_t>(((n * d.ic + c) * d.ih + h) * d.iw + w);
  }
  size_t wei(int64_t o, int64_t c, int64_t h, int64_t w) const {
    return static_cast<size_t>(((o * icg() + c) * d.kh + h) * d.kw + w);
  }
  size_t dst(int64_t n, int64_t o, int64_t h, int64_t w) const {
    return static_cast<size_t>(((n * d.oc + o) * d.oh() + h) * d.ow() + w);
  }
};
}  // namespace

void conv_forward(const ConvDesc& d, const float* src, const float* wei,
                              const float* bia, float* dst) {
  ConvIndex ix{d};
  const int64_t oh = d.oh(), ow = d.ow();
  for (int64_t n = 0; n < d.mb; ++n)
    for (int64_t o = 0; o < d.oc; ++o) {
      const int64_t g = o / ix.ocg();
      for (int64_t y = 0; y < oh; ++y)
        for (int64_t x = 0; x < ow; ++x) {
          double acc = (d.bias && bia) ? bia[o] : 0.0;
          for (int64_t c = 0; c < ix.icg(); ++c)
            for (int64_t ky = 0; ky < d.kh; ++ky)
              for (int64_t kx = 0; kx < d.kw; ++kx) {
                const int64_t iy = y * d.sh - d.ph + ky, ixx = x * d.sw - d.pw + kx;
                if (iy < 0 || iy >= d.ih || ixx < 0 || ixx >= d.iw) continue;  // zero padding
                acc += double(src[ix.src(n, g * ix.icg() + c, iy, ixx)]) * wei[ix.wei(o, c, ky, kx)];
              }
          if (d.relu) acc = std::max(acc, 0.0);  // fused ReLU
          dst[ix.dst(n, o, y, x)] = static_cast<float>(acc);
        }
    }
}

void conv_backward_data(const ConvDesc& d, const float* diff_dst, const float* wei,
                                    float* diff_src) {
  // Scatter every diff_dst element back through the window that produced it.
  ConvIndex ix{d};
  const int64_t oh = d.oh(), ow = d.ow();
  std::vector<double> acc(static_cast<size_t>(d.mb * d.ic * d.ih * d.iw), 0.0);
  for (int64_t n = 0; n < d.mb; ++n)
    for (int64_t o = 0; o < d.oc; ++o) {
      const int64_t g = o / ix.ocg();
      for (int64_t y = 0; y < oh; ++y)
        for (int64_t x = 0; x < ow; ++x) {
          const double dd = diff_dst[ix.dst(n, o, y, x)];
          for (int64_t c = 0; c < ix.icg(); ++c)
            for (int64_t ky = 0; ky < d.kh; ++ky)
              for (int64_t kx = 0; kx < d.kw; ++kx) {
                const int64_t iy = y * d.sh - d.ph + ky, ixx = x * d.sw - d.pw + kx;
                if (iy < 0 || iy >= d.ih || ixx < 0 || ixx >= d.iw) continue;
                acc[ix.src(n, g * ix.icg() + c, iy, ixx)] += dd * wei[ix.wei(o, c, ky, kx)];
              }
        }
    }
  for (size_t i = 0; i < acc.size(); ++i) diff_src[i] = static_cast<float>(acc[i]);
}

void conv_backward_weights(const ConvDesc& d, const float* src, const float* diff_dst,
                                       float* diff_wei, float* diff_bia) {
  ConvIndex ix{d};
  const int64_t oh = d.oh(), ow = d.ow();
  for (int64_t o = 0; o < d.oc; ++o) {
    const int64_t g = o / ix.ocg();
    for (int64_t c = 0; c < ix.icg(); ++c)
      for (int64_t ky = 0; ky < d.kh; ++ky)
        for (int64_t kx = 0; kx < d.kw; ++kx) {
          double acc = 0.0;
          for (int64_t n = 0; n < d.mb; ++n)
            for (int64_t y = 0; y < oh; ++y)
              for (int64_t x = 0; x < ow; ++x) {
                const int64_t iy = y * d.sh - d.ph + ky, ixx = x * d.sw - d.pw + kx;
                if (iy < 0 || iy >= d.ih || ixx < 0 || ixx >= d.iw) continue;
                acc += double(src[ix.src(n, g * ix.icg() + c, iy, ixx)]) *
                       diff_dst[ix.dst(n, o, y, x)];
              }
          diff_wei[ix.wei(o, c, ky, kx)] = static_cast<float>(acc);
        }
    if (d.bias && diff_bia) {
      double acc = 0.0;
      for (int64_t n = 0; n < d.mb; ++n)
        for (int64_t y = 0; y < oh; ++y)
          for (int64_t x = 0; x < ow; ++x) acc += diff_dst[ix.dst(n, o, y, x)];
      diff_bia[o] = static_cast<float>(acc);
    }
  }
}

// ---- pooling --------------------------------------------------------------------------------
size_t pool_workspace_bytes(const PoolDesc& d) {
  if (d.kind != PoolKind::max) return 0;
  return static_cast<size_t>(d.mb * d.c * d.oh() * d.ow()) * sizeof(int32_t);
}

void pool_forward(const PoolDesc& d, const float* src, float* dst, void* workspace) {
  // src (mb,c,ih,iw) -> dst (mb,c,oh,ow); workspace int32 (mb,c,oh,ow) for max pooling
  const int64_t oh = d.oh(), ow = d.ow();
  auto* argmax = static_cast<int32_t*>(workspace);
  for (int64_t p = 0; p < d.mb * d.c; ++p) {  // p = one (n,c) plane
    const float* plane = src + p * d.ih * d.iw;
    for (int64_t y = 0; y < oh; ++y)
      for (int64_t x = 0; x < ow; ++x) {
        const int64_t y0 = y * d.sh - d.ph, x0 = x * d.sw - d.pw;
        double best = -INFINITY, sum = 0.0;
        int64_t best_at = -1, count = 0;
        for (int64_t iy = y0; iy < y0 + d.kh; ++iy)
          for (int64_t ixx = x0; ixx < x0 + d.kw; ++ixx) {
            if (iy < 0 || iy >= d.ih || ixx < 0 || ixx >= d.iw) continue;  // padding: ignored
            const double v = plane[iy * d.iw + ixx];
            if (best_at < 0 || v > best) { best = v; best_at = iy * d.iw + ixx; }
            sum += v;
            ++count;
          }
        const int64_t o = (p * oh + y) * ow + x;
        if (d.kind == PoolKind::max) {
          dst[o] = static_cast<float>(best);
          if (argmax) argmax[o] = static_cast<int32_t>(best_at);
        } else {
          dst[o] = static_cast<float>(count ? sum / double(count) : 0.0);  // excludes padding
        }
      }
  }
}

void pool_backward(const PoolDesc& d, const float* diff_dst, const void* workspace,
                               float* diff_src) {
  // diff_dst (mb,c,oh,ow) -> diff_src (mb,c,ih,iw)
  const int64_t oh = d.oh(), ow = d.ow();
  const auto* argmax = static_cast<const int32_t*>(workspace);
  std::vector<double> acc(static_cast<size_t>(d.mb * d.c * d.ih * d.iw), 0.0);
  for (int64_t p = 0; p < d.mb * d.c; ++p) {
    double* plane = acc.data() + p * d.ih * d.iw;
    for (int64_t y = 0; y < oh; ++y)
      for (int64_t x = 0; x < ow; ++x) {
        const int64_t o = (p * oh + y) * ow + x;
        if (d.kind == PoolKind::max) {
          TS_CHECK(argmax, "max pooling backward needs the forward workspace: " + d.str());
          plane[argmax[o]] += diff_dst[o];
          continue;
        }
        const int64_t y0 = y * d.sh - d.ph, x0 = x * d.sw - d.pw;
        int64_t count = 0;
        for (int64_t iy = y0; iy < y0 + d.kh; ++iy)
          for (int64_t ixx = x0; ixx < x0 + d.kw; ++ixx)
            if (iy >= 0 && iy < d.ih && ixx >= 0 && ixx < d.iw) ++count;
        for (int64_t iy = y0; iy < y0 + d.kh; ++iy)
          for (int64_t ixx = x0; ixx < x0 + d.kw; ++ixx)
            if (iy >= 0 && iy < d.ih && ixx >= 0 && ixx < d.iw)
              plane[iy * d.iw + ixx] += double(diff_dst[o]) / double(count);
      }
  }
  for (size_t i = 0; i < acc.size(); ++i) diff_src[i] = static_cast<float>(acc[i]);
}

// ---- fully connected ------------------------------------------------------------------------
void fc_forward(const FcDesc& d, const float* src, const float* wei, const float* bia,
                            float* dst) {
  // src (mb,ic), wei (oc,ic), bia (oc) -> dst (mb,oc)
  for (int64_t n = 0; n < d.mb; ++n)
    for (int64_t o = 0; o < d.oc; ++o) {
      double acc = (d.bias && bia) ? bia[o] : 0.0;
      for (int64_t i = 0; i < d.ic; ++i) acc += double(src[n * d.ic + i]) * wei[o * d.ic + i];
      dst[n * d.oc + o] = static_cast<float>(acc);
    }
}

void fc_backward_data(const FcDesc& d, const float* diff_dst, const float* wei,
                                  float* diff_src) {
  // diff_dst (mb,oc), wei (oc,ic) -> diff_src (mb,ic)
  for (int64_t n = 0; n < d.mb; ++n)
    for (int64_t i = 0; i < d.ic; ++i) {
      double acc = 0.0;
      for (int64_t o = 0; o < d.oc; ++o) acc += double(diff_dst[n * d.oc + o]) * wei[o * d.ic + i];
      diff_src[n * d.ic + i] = static_cast<float>(acc);
    }
}

void fc_backward_weights(const FcDesc& d, const float* src, const float* diff_dst,
                                     float* diff_wei, float* diff_bia) {
  // src (mb,ic), diff_dst (mb,oc) -> diff_wei (oc,ic), diff_bia (oc)
  for (int64_t o = 0; o < d.oc; ++o) {
    for (int64_t i = 0; i < d.ic; ++i) {
      double acc = 0.0;
      for (int64_t n = 0; n < d.mb; ++n) acc += double(src[n * d.ic + i]) * diff_dst[n * d.oc + o];
      diff_wei[o * d.ic + i] = static_cast<float>(acc);
    }
    if (d.bias && diff_bia) {
      double acc = 0.0;
      for (int64_t n = 0; n < d.mb; ++n) acc += diff_dst[n * d.oc + o];
      diff_bia[o] = static_cast<float>(acc);
    }
  }
}

// ---- batch normalisation --------------------------------------------------------------------
// Element (n, c, s) of a (mb,c,h*w) tensor.
namespace {
inline size_t bn_at(const BnDesc& d, int64_t n, int64_t c, int64_t s) {
  return static_cast<size_t>((n * d.c + c) * d.h * d.w + s);
}
}  // namespace

void batchnorm_forward_training(const BnDesc& d, const float* src, const float* scale,
                                            const float* shift, float* dst, float* mean,
                                            float* variance) {
  const int64_t hw = d.h * d.w;
  const double count = double(d.mb * hw);
  for (int64_t c = 0; c < d.c; ++c) {
    double sum = 0.0;
    for (int64_t n = 0; n < d.mb; ++n)
      for (int64_t s = 0; s < hw; ++s) sum += src[bn_at(d, n, c, s)];
    const double mu = sum / count;
    double sq = 0.0;
    for (int64_t n = 0; n < d.mb; ++n)
      for (int64_t s = 0; s < hw; ++s) {
        const double x = src[bn_at(d, n, c, s)] - mu;
        sq += x * x;
      }
    const double var = sq / count;  // biased
    mean[c] = static_cast<float>(mu);
    variance[c] = static_cast<float>(var);
    const double inv_std = 1.0 / std::sqrt(var + double(d.eps));
    for (int64_t n = 0; n < d.mb; ++n)
      for (int64_t s = 0; s < hw; ++s) {
        const size_t i = bn_at(d, n, c, s);
        const double y = scale[c] * (src[i] - mu) * inv_std + shift[c];
        dst[i] = static_cast<float>(d.relu ? std::max(y, 0.0) : y);  // fused ReLU
      }
  }
}

void batchnorm_forward_inference(const BnDesc& d, const float* src, const float* scale,
                                             const float* shift, const float* mean,
                                             const float* variance, float* dst) {
  const int64_t hw = d.h * d.w;
  for (int64_t c = 0; c < d.c; ++c) {
    const double inv_std = 1.0 / std::sqrt(double(variance[c]) + double(d.eps));
    for (int64_t n = 0; n < d.mb; ++n)
      for (int64_t s = 0; s < hw; ++s) {
        const size_t i = bn_at(d, n, c, s);
        const double y = scale[c] * (double(src[i]) - mean[c]) * inv_std + shift[c];
        dst[i] = static_cast<float>(d.relu ? std::max(y, 0.0) : y);  // fused ReLU
      }
  }
}

void batchnorm_backward(const BnDesc& d, const float* src, const float* diff_dst,
                                    const float* scale, const float* mean, const float* variance,
                                    float* diff_src, float* diff_scale, float* diff_shift) {
  // With xhat = (x - mean) / sqrt(var + eps) and M = mb*h*w:
  //   diff_shift = sum dy,  diff_scale = sum dy * xhat,
  //   diff_src = scale / sqrt(var + eps) * (dy - diff_shift / M - xhat * diff_scale / M)
  const int64_t hw = d.h * d.w;
  const double count = double(d.mb * hw);
  for (int64_t c = 0; c < d.c; ++c) {
    const double inv_std = 1.0 / std::sqrt(double(variance[c]) + double(d.eps));
    double sum_dy = 0.0, sum_dy_xhat = 0.0;
    for (int64_t n = 0; n < d.mb; ++n)
      for (int64_t s = 0; s < hw; ++s) {
        const size_t i = bn_at(d, n, c, s);
        const double xhat = (double(src[i]) - mean[c]) * inv_std;
        sum_dy += diff_dst[i];
        sum_dy_xhat += diff_dst[i] * xhat;
      }
    diff_shift[c] = static_cast<float>(sum_dy);
    diff_scale[c] = static_cast<float>(sum_dy_xhat);
    for (int64_t n = 0; n < d.mb; ++n)
      for (int64_t s = 0; s < hw; ++s) {
        const size_t i = bn_at(d, n, c, s);
        const double xhat = (double(src[i]) - mean[c]) * inv_std;
        diff_src[i] = static_cast<float>(scale[c] * inv_std *
                                         (diff_dst[i] - sum_dy / count - xhat * sum_dy_xhat / count));
      }
  }
}

// ---- activations ----------------------------------------------------------------------------
void eltwise_forward(const EltwiseDesc& d, const float* src, float* dst) {
  for (int64_t i = 0; i < d.n; ++i) {
    if (d.kind == EltwiseKind::relu)
      dst[i] = src[i] > 0.0f ? src[i] : 0.0f;
    else if (d.kind == EltwiseKind::relu6)
      dst[i] = src[i] > 0.0f ? (src[i] < 6.0f ? src[i] : 6.0f) : 0.0f;
    else
      dst[i] = static_cast<float>(1.0 / (1.0 + std::exp(-double(src[i]))));
  }
}

void eltwise_backward(const EltwiseDesc& d, const float* src, const float* dst,
                                  const float* diff_dst, float* diff_src) {
  for (int64_t i = 0; i < d.n; ++i) {
    if (d.kind == EltwiseKind::relu)
      diff_src[i] = src[i] > 0.0f ? diff_dst[i] : 0.0f;
    else if (d.kind == EltwiseKind::relu6)  // gradient flows only strictly inside (0, 6)
      diff_src[i] = src[i] > 0.0f && src[i] < 6.0f ? diff_dst[i] : 0.0f;
    else  // d sigmoid / dx = y (1 - y), from the forward output
      diff_src[i] = static_cast<float>(double(diff_dst[i]) * dst[i] * (1.0 - double(dst[i])));
  }
}

// ---- losses ---------------------------------------------------------------------------------
float softmax_xent_forward(int64_t mb, int64_t classes, const float* logits,
                                       const int32_t* labels, float* probs) {
  // logits (mb,classes), labels (mb) -> probs (mb,classes); returns mean of -log p[label]
  double loss = 0.0;
  for (int64_t n = 0; n < mb; ++n) {
    const float* z = logits + n * classes;
    TS_CHECK(labels[n] >= 0 && labels[n] < classes,
             "label " + std::to_string(labels[n]) + " of sample " + std::to_string(n) +
                 " is outside [0," + std::to_string(classes) + ")");
    double zmax = z[0];
    for (int64_t k = 1; k < classes; ++k) zmax = std::max(zmax, double(z[k]));
    double sum = 0.0;
    for (int64_t k = 0; k < classes; ++k) sum += std::exp(double(z[k]) - zmax);
    for (int64_t k = 0; k < classes; ++k)
      probs[n * classes + k] = static_cast<float>(std::exp(double(z[k]) - zmax) / sum);
    loss += -(double(z[labels[n]]) - zmax - std::log(sum));  // log-softmax: no log(0)
  }
  return static_cast<float>(loss / double(mb));
}

void softmax_xent_backward(int64_t mb, int64_t classes, const float* probs,
                                       const int32_t* labels, float* diff_logits) {
  for (int64_t n = 0; n < mb; ++n)
    for (int64_t k = 0; k < classes; ++k) {
      const double onehot = (k == labels[n]) ? 1.0 : 0.0;
      diff_logits[n * classes + k] =
          static_cast<float>((double(probs[n * classes + k]) - onehot) / double(mb));
    }
}

float mse_forward(int64_t n, const float* pred, const float* target) {
  double sum = 0.0;
  for (int64_t i = 0; i < n; ++i) {
    const double e = double(pred[i]) - target[i];
    sum += e * e;
  }
  return static_cast<float>(sum / double(n));
}

void mse_backward(int64_t n, const float* pred, const float* target,
                              float* diff_pred) {
  for (int64_t i = 0; i < n; ++i)
    diff_pred[i] = static_cast<float>(2.0 * (double(pred[i]) - target[i]) / double(n));
}

void scale(int64_t n, float a, float* x) {
  for (int64_t i = 0; i < n; ++i) x[i] *= a;
}

// ---- tensor plumbing ------------------------------------------------------------------------
void add(int64_t n, const float* a, const float* b, float* dst) {
  for (int64_t i = 0; i < n; ++i) dst[i] = a[i] + b[i];
}

void add_relu(int64_t n, const float* a, const float* b, float* dst) {
  for (int64_t i = 0; i < n; ++i) dst[i] = std::max(a[i] + b[i], 0.0f);
}

void concat_forward(int64_t mb, int64_t hw, const std::vector<int64_t>& channels,
                                const std::vector<const float*>& srcs, float* dst) {
  // srcs[i] (mb,channels[i],hw) -> dst (mb,sum channels,hw)
  TS_CHECK(channels.size() == srcs.size(), "concat: channels and srcs differ in length");
  int64_t total = 0;
  for (int64_t c : channels) total += c;
  for (int64_t n = 0; n < mb; ++n) {
    int64_t offset = 0;  // channel offset of input i in dst
    for (size_t i = 0; i < srcs.size(); ++i) {
      for (int64_t c = 0; c < channels[i]; ++c)
        for (int64_t s = 0; s < hw; ++s)
          dst[(n * total + offset + c) * hw + s] = srcs[i][(n * channels[i] + c) * hw + s];
      offset += channels[i];
    }
  }
}

void concat_backward(int64_t mb, int64_t hw, const std::vector<int64_t>& channels,
                                 const float* diff_dst, const std::vector<float*>& diff_srcs) {
  TS_CHECK(channels.size() == diff_srcs.size(), "concat: channels and diff_srcs differ in length");
  int64_t total = 0;
  for (int64_t c : channels) total += c;
  for (int64_t n = 0; n < mb; ++n) {
    int64_t offset = 0;
    for (size_t i = 0; i < diff_srcs.size(); ++i) {
      if (diff_srcs[i])  // null: that input needs no gradient
        for (int64_t c = 0; c < channels[i]; ++c)
          for (int64_t s = 0; s < hw; ++s)
            diff_srcs[i][(n * channels[i] + c) * hw + s] = diff_dst[(n * total + offset + c) * hw + s];
      offset += channels[i];
    }
  }
}

void dropout_apply(int64_t n, const uint8_t* mask, float scale, const float* src,
                               float* dst) {
  for (int64_t i = 0; i < n; ++i) dst[i] = mask[i] ? src[i] * scale : 0.0f;
}

void sgd_step(int64_t n, float lr, float momentum, float weight_decay, bool nesterov,
                          float* weights, const float* grads, float* velocity) {
  //   g' = g + wd * w;  v = momentum * v + g';  w -= lr * (nesterov ? g' + momentum * v : v)
  for (int64_t i = 0; i < n; ++i) {
    const double g = double(grads[i]) + double(weight_decay) * weights[i];
    const double v = double(momentum) * velocity[i] + g;
    velocity[i] = static_cast<float>(v);
    const double step = nesterov ? g + double(momentum) * v : v;
    weights[i] = static_cast<float>(double(weights[i]) - double(lr) * step);
  }
}

void axpby(int64_t n, float a, const float* x, float b, float* y) {
  for (int64_t i = 0; i < n; ++i) y[i] = static_cast<float>(double(a) * x[i] + double(b) * y[i]);
}

}  // namespace ts::ref
