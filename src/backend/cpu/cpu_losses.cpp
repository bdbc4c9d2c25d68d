// The CPU losses (cpu_ops.h) on plain fp32: softmax cross-entropy (oneDNN softmax for the
// probabilities; the loss from the logits as max + log-sum-exp - logit[label], which stays
// finite where probabilities underflow to 0) and mean-squared error, as OpenMP loops.
#include <cmath>

#include "backend/cpu/cpu_ops.h"

namespace ts::cpu {
namespace {

class CpuSoftmaxXentOp final : public SoftmaxXentOp {
 public:
  CpuSoftmaxXentOp(CpuContext& ctx, const TensorDesc& logits)
      : ctx_(ctx), mb_(logits.dims[0]), classes_(logits.numel() / logits.dims[0]) {
    const memory::desc given = ctx.md(logits);
    logits_in_.plan(ctx, given, f32_plain(given.dims()));
    diff_out_.plan(ctx, f32_plain(given.dims()), given);
    plain_ = f32_plain({mb_, classes_});
    softmax_ = ctx.primitive<dnnl::softmax_forward>("softmax/" + md_key(plain_), [&] {
      dnnl::softmax_forward::desc desc(dnnl::prop_kind::forward_training, plain_, 1);
      return dnnl::softmax_forward::primitive_desc(desc, ctx.attr(), ctx.engine);
    });
  }

  // logits (mb, classes), labels (mb) -> probs (mb, classes), loss[0] = mean cross-entropy
  void forward(const Tensor& logits, const int32_t* labels, float* probs, float* loss) override {
    const float* z_all = static_cast<const float*>(logits_in_.get(ctx_, logits.data).get_data_handle());
    guarded(__FILE__, __LINE__, "softmax forward", [&] {
      ctx_.run(softmax_.prim, softmax_.pd.scratchpad_desc(),
               {{DNNL_ARG_SRC, ctx_.wrap(plain_, z_all)}, {DNNL_ARG_DST, ctx_.wrap(plain_, probs)}});
    });
    const int64_t mb = mb_, classes = classes_;
    double sum = 0.0;
#pragma omp parallel for reduction(+ : sum)
    for (int64_t n = 0; n < mb; ++n) {
      const float* z = z_all + n * classes;
      double zmax = z[0];
      for (int64_t k = 1; k < classes; ++k) zmax = std::max(zmax, double(z[k]));
      double exp_sum = 0.0;
      for (int64_t k = 0; k < classes; ++k) exp_sum += std::exp(double(z[k]) - zmax);
      sum += zmax + std::log(exp_sum) - double(z[labels[n]]);
    }
    loss[0] = static_cast<float>(sum / double(mb));
  }

  // diff_logits = loss_scale * (probs - onehot(labels)) / mb
  void backward(const float* probs, const int32_t* labels, const LossGradScale& loss_scale,
                const Tensor& diff_logits) override {
    float* diff = static_cast<float*>(diff_out_.target(ctx_, diff_logits.data).get_data_handle());
    const int64_t mb = mb_, classes = classes_;
    const float inv_mb = loss_scale.value() / static_cast<float>(mb);
#pragma omp parallel for
    for (int64_t n = 0; n < mb; ++n)
      for (int64_t k = 0; k < classes; ++k)
        diff[n * classes + k] = (probs[n * classes + k] - (k == labels[n] ? 1.0f : 0.0f)) * inv_mb;
    diff_out_.finish(ctx_, diff_logits.data);
  }

 private:
  CpuContext& ctx_;
  int64_t mb_, classes_;
  memory::desc plain_;
  InPort logits_in_;
  OutPort diff_out_;
  Cached<dnnl::softmax_forward> softmax_;
};

class CpuMseOp final : public MseOp {
 public:
  CpuMseOp(CpuContext& ctx, const TensorDesc& pred) : ctx_(ctx), n_(pred.numel()) {
    const memory::desc given = ctx.md(pred);
    pred_in_.plan(ctx, given, f32_plain(given.dims()));
    diff_out_.plan(ctx, f32_plain(given.dims()), given);
  }

  // loss[0] = mean((pred - target)^2)
  void forward(const Tensor& pred, const float* target, float* loss) override {
    const float* p = static_cast<const float*>(pred_in_.get(ctx_, pred.data).get_data_handle());
    const int64_t n = n_;
    double sum = 0.0;
#pragma omp parallel for reduction(+ : sum)
    for (int64_t i = 0; i < n; ++i) {
      const double e = double(p[i]) - double(target[i]);
      sum += e * e;
    }
    loss[0] = static_cast<float>(sum / double(n));
  }

  // diff_pred = loss_scale * 2 (pred - target) / n
  void backward(const Tensor& pred, const float* target, const LossGradScale& loss_scale,
                const Tensor& diff_pred) override {
    const float* p = static_cast<const float*>(pred_in_.get(ctx_, pred.data).get_data_handle());
    float* diff = static_cast<float*>(diff_out_.target(ctx_, diff_pred.data).get_data_handle());
    const int64_t n = n_;
    const float k = 2.0f * loss_scale.value() / static_cast<float>(n);
#pragma omp parallel for
    for (int64_t i = 0; i < n; ++i) diff[i] = k * (p[i] - target[i]);
    diff_out_.finish(ctx_, diff_pred.data);
  }

 private:
  CpuContext& ctx_;
  int64_t n_;
  InPort pred_in_;
  OutPort diff_out_;
};

}  // namespace

std::unique_ptr<SoftmaxXentOp> plan_softmax_xent(CpuContext& ctx, const TensorDesc& logits) {
  return guarded_plan<CpuSoftmaxXentOp>(__FILE__, __LINE__, "planning softmax cross-entropy on " + logits.str(),
                                        ctx, logits);
}

std::unique_ptr<MseOp> plan_mse(CpuContext& ctx, const TensorDesc& pred) {
  return guarded_plan<CpuMseOp>(__FILE__, __LINE__, "planning mean-squared error on " + pred.str(), ctx, pred);
}

}  // namespace ts::cpu
