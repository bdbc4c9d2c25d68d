// The reference backend (see ref_backend.h): host memory, plain fp32 tensors, and planned ops
// that check their descs once and then call the reference kernels.
#include "backend/ref/ref_backend.h"

#include <cmath>

#include "backend/ref/ref_kernels.h"
#include "core/error.h"
#include "core/host_info.h"

namespace ts {
namespace {

// Plan-time check: every tensor the ref backend sees is plain f32 with `numel` values.
void expect_plain(const TensorDesc& t, int64_t numel, const std::string& what) {
  if (t.dtype != DType::f32 || !t.is_plain() || t.numel() != numel)
    throw ConfigError("backend ref computes on plain f32 tensors only; " + what + " is " + t.str() +
                      " (expected " + std::to_string(numel) + " plain f32 values)");
}

// The output desc of a plan: the request if it is plain f32, else (any) plain f32 of `dims`.
TensorDesc plain_output(const TensorDesc& request, const Shape& dims, const std::string& what) {
  if (!request.is_any()) {
    expect_plain(request, dims.numel(), what);
    return request;
  }
  return TensorDesc::plain(dims);
}

class RefConvOp final : public ConvOp {
 public:
  RefConvOp(const ConvDesc& d, const TensorDesc& src, const TensorDesc& dst) : d_(d) {
    expect_plain(src, d.mb * d.ic * d.ih * d.iw, d.str() + " src");
    dst_ = plain_output(dst, Shape{d.mb, d.oc, d.oh(), d.ow()}, d.str() + " dst");
  }
  void forward(const Tensor& src, const float* wei, const float* bia, const Tensor& dst) override {
    TS_CHECK(!d_.bias || bia, "conv forward: " + d_.str() + " has a bias but bia is null");
    ref::conv_forward(d_, src.f32(), wei, bia, dst.f32());
  }
  void backward(const Tensor& src, const Tensor& diff_dst, const float* wei, const Tensor& diff_src,
                float* diff_wei, float* diff_bia) override {
    ref::conv_backward_weights(d_, src.f32(), diff_dst.f32(), diff_wei, diff_bia);
    if (diff_src) ref::conv_backward_data(d_, diff_dst.f32(), wei, diff_src.f32());
  }

 private:
  ConvDesc d_;
};

class RefPoolOp final : public PoolOp {
 public:
  RefPoolOp(const PoolDesc& d, const TensorDesc& src, const TensorDesc& dst) : d_(d) {
    expect_plain(src, d.mb * d.c * d.ih * d.iw, d.str() + " src");
    dst_ = plain_output(dst, Shape{d.mb, d.c, d.oh(), d.ow()}, d.str() + " dst");
  }
  size_t workspace_bytes() const override { return ref::pool_workspace_bytes(d_); }
  void forward(const Tensor& src, const Tensor& dst, void* workspace) override {
    ref::pool_forward(d_, src.f32(), dst.f32(), workspace);
  }
  void backward(const Tensor& diff_dst, const void* workspace, const Tensor& diff_src) override {
    ref::pool_backward(d_, diff_dst.f32(), workspace, diff_src.f32());
  }

 private:
  PoolDesc d_;
};

class RefFcOp final : public FcOp {
 public:
  RefFcOp(const FcDesc& d, const TensorDesc& src, const TensorDesc& dst) : d_(d) {
    expect_plain(src, d.mb * d.ic, d.str() + " src");
    dst_ = plain_output(dst, Shape{d.mb, d.oc}, d.str() + " dst");
  }
  void forward(const Tensor& src, const float* wei, const float* bia, const Tensor& dst) override {
    ref::fc_forward(d_, src.f32(), wei, bia, dst.f32());
  }
  void backward(const Tensor& src, const Tensor& diff_dst, const float* wei, const Tensor& diff_src,
                float* diff_wei, float* diff_bia) override {
    ref::fc_backward_weights(d_, src.f32(), diff_dst.f32(), diff_wei, diff_bia);
    if (diff_src) ref::fc_backward_data(d_, diff_dst.f32(), wei, diff_src.f32());
  }

 private:
  FcDesc d_;
};

class RefBatchNormOp final : public BatchNormOp {
 public:
  RefBatchNormOp(const BnDesc& d, const TensorDesc& src, const TensorDesc& dst) : d_(d) {
    expect_plain(src, d.mb * d.c * d.h * d.w, d.str() + " src");
    dst_ = plain_output(dst, src.dims, d.str() + " dst");
  }
  void forward_training(const Tensor& src, const float* scale, const float* shift, const Tensor& dst,
                        float* mean, float* variance) override {
    ref::batchnorm_forward_training(d_, src.f32(), scale, shift, dst.f32(), mean, variance);
  }
  void forward_inference(const Tensor& src, const float* scale, const float* shift, const float* mean,
                         const float* variance, const Tensor& dst) override {
    ref::batchnorm_forward_inference(d_, src.f32(), scale, shift, mean, variance, dst.f32());
  }
  void backward(const Tensor& src, const Tensor& diff_dst, const float* scale, const float* mean,
                const float* variance, const Tensor& diff_src, float* diff_scale,
                float* diff_shift) override {
    ref::batchnorm_backward(d_, src.f32(), diff_dst.f32(), scale, mean, variance, diff_src.f32(),
                            diff_scale, diff_shift);
  }

 private:
  BnDesc d_;
};

class RefEltwiseOp final : public EltwiseOp {
 public:
  RefEltwiseOp(const EltwiseDesc& d, const TensorDesc& src, const TensorDesc& dst) : d_(d) {
    expect_plain(src, d.n, d.str() + " src");
    dst_ = plain_output(dst, src.dims, d.str() + " dst");
  }
  void forward(const Tensor& src, const Tensor& dst) override {
    ref::eltwise_forward(d_, src.f32(), dst.f32());
  }
  void backward(const Tensor& src, const Tensor& dst, const Tensor& diff_dst,
                const Tensor& diff_src) override {
    ref::eltwise_backward(d_, src.f32(), dst.f32(), diff_dst.f32(), diff_src.f32());
  }

 private:
  EltwiseDesc d_;
};

class RefAddOp final : public AddOp {
 public:
  RefAddOp(const TensorDesc& a, const TensorDesc& b, bool relu) : relu_(relu) {
    dst_ = a;
    expect_plain(a, a.numel(), "add input a");
    expect_plain(b, a.numel(), "add input b");
  }
  void forward(const Tensor& a, const Tensor& b, const Tensor& dst) override {
    if (relu_) ref::add_relu(dst_.numel(), a.f32(), b.f32(), dst.f32());
    else ref::add(dst_.numel(), a.f32(), b.f32(), dst.f32());
  }

 private:
  bool relu_;
};

// (mb, channels, hw) view of a concat input or output.
struct ConcatShape {
  int64_t mb = 0, hw = 0;
  std::vector<int64_t> channels;
};

class RefConcatOp final : public ConcatOp {
 public:
  RefConcatOp(const std::vector<TensorDesc>& srcs, const TensorDesc& dst) {
    TS_CHECK(!srcs.empty() && srcs[0].dims.rank() >= 2, "concat needs inputs of rank >= 2");
    Shape out = srcs[0].dims;
    s_.mb = out[0];
    s_.hw = srcs[0].numel() / (s_.mb * srcs[0].dims[1]);  // (mb, c, h, w): hw = h * w
    out[1] = 0;
    for (const TensorDesc& t : srcs) {
      expect_plain(t, t.numel(), "concat input");
      s_.channels.push_back(t.dims[1]);
      out[1] += t.dims[1];
    }
    dst_ = plain_output(dst, out, "concat dst");
  }
  void forward(const std::vector<Tensor>& srcs, const Tensor& dst) override {
    std::vector<const float*> p;
    for (const Tensor& t : srcs) p.push_back(t.f32());
    ref::concat_forward(s_.mb, s_.hw, s_.channels, p, dst.f32());
  }
  void backward(const Tensor& diff_dst, const std::vector<Tensor>& diff_srcs) override {
    std::vector<float*> p;
    for (const Tensor& t : diff_srcs) p.push_back(t.f32());
    ref::concat_backward(s_.mb, s_.hw, s_.channels, diff_dst.f32(), p);
  }

 private:
  ConcatShape s_;
};

class RefDropoutOp final : public DropoutOp {
 public:
  explicit RefDropoutOp(const TensorDesc& src) {
    dst_ = src;
    expect_plain(src, src.numel(), "dropout src");
  }
  void forward(const uint8_t* mask, float scale, const Tensor& src, const Tensor& dst) override {
    ref::dropout_apply(dst_.numel(), mask, scale, src.f32(), dst.f32());
  }
  void backward(const uint8_t* mask, float scale, const Tensor& diff_dst, const Tensor& diff_src) override {
    ref::dropout_apply(dst_.numel(), mask, scale, diff_dst.f32(), diff_src.f32());
  }
};

class RefSoftmaxXentOp final : public SoftmaxXentOp {
 public:
  explicit RefSoftmaxXentOp(const TensorDesc& logits)
      : mb_(logits.dims[0]), classes_(logits.numel() / logits.dims[0]) {
    expect_plain(logits, logits.numel(), "softmax cross-entropy logits");
  }
  void forward(const Tensor& logits, const int32_t* labels, float* probs, float* loss) override {
    loss[0] = ref::softmax_xent_forward(mb_, classes_, logits.f32(), labels, probs);
  }
  void backward(const float* probs, const int32_t* labels, const LossGradScale& loss_scale,
                const Tensor& diff_logits) override {
    ref::softmax_xent_backward(mb_, classes_, probs, labels, diff_logits.f32());
    if (const float s = loss_scale.value(); s != 1.0f) ref::scale(mb_ * classes_, s, diff_logits.f32());
  }

 private:
  int64_t mb_, classes_;
};

class RefMseOp final : public MseOp {
 public:
  explicit RefMseOp(const TensorDesc& pred) : n_(pred.numel()) {
    expect_plain(pred, pred.numel(), "mean-squared error predictions");
  }
  void forward(const Tensor& pred, const float* target, float* loss) override {
    loss[0] = ref::mse_forward(n_, pred.f32(), target);
  }
  void backward(const Tensor& pred, const float* target, const LossGradScale& loss_scale,
                const Tensor& diff_pred) override {
    ref::mse_backward(n_, pred.f32(), target, diff_pred.f32());
    if (const float s = loss_scale.value(); s != 1.0f) ref::scale(n_, s, diff_pred.f32());
  }

 private:
  int64_t n_;
};

}  // namespace

DeviceDescription RefBackend::describe() const {
  DeviceDescription d;
  d.backend = "ref";
  d.device = "cpu";
  d.name = host_cpu_model();
  d.isa = "generic";  // plain C++ loops, no ISA dispatch
  d.generation = "none";
  d.memory_bytes = host_memory_bytes();
  d.compute_units = 1;  // one thread, always
  return d;
}

bool RefBackend::supports(Op, Precision precision) const {
  return precision == Precision::fp32;  // every op, fp32 only
}

void RefBackend::set_precision(Precision precision) {
  if (precision != Precision::fp32)
    throw ConfigError(std::string("backend ref computes in fp32 only (it is the test oracle); precision '") +
                      precision_name(precision) + "' needs backend cpu (bf16) or cuda (fp16, tf32)");
}

void RefBackend::reorder(const Tensor& src, const Tensor& dst) {
  expect_plain(src.desc, src.desc.numel(), "reorder src");
  expect_plain(dst.desc, src.desc.numel(), "reorder dst");
  copy(dst.data, src.data, src.desc.bytes);
}

// ---- planning ---------------------------------------------------------------------------------
std::unique_ptr<ConvOp> RefBackend::plan_conv(const ConvDesc& d, const TensorDesc& src, const TensorDesc& dst) {
  return std::make_unique<RefConvOp>(d, src, dst);
}
std::unique_ptr<PoolOp> RefBackend::plan_pool(const PoolDesc& d, const TensorDesc& src, const TensorDesc& dst) {
  return std::make_unique<RefPoolOp>(d, src, dst);
}
std::unique_ptr<FcOp> RefBackend::plan_fc(const FcDesc& d, const TensorDesc& src, const TensorDesc& dst) {
  return std::make_unique<RefFcOp>(d, src, dst);
}
std::unique_ptr<BatchNormOp> RefBackend::plan_batchnorm(const BnDesc& d, const TensorDesc& src,
                                                        const TensorDesc& dst) {
  return std::make_unique<RefBatchNormOp>(d, src, dst);
}
std::unique_ptr<EltwiseOp> RefBackend::plan_eltwise(const EltwiseDesc& d, const TensorDesc& src,
                                                    const TensorDesc& dst) {
  return std::make_unique<RefEltwiseOp>(d, src, dst);
}
std::unique_ptr<AddOp> RefBackend::plan_add(const TensorDesc& a, const TensorDesc& b, bool relu) {
  return std::make_unique<RefAddOp>(a, b, relu);
}
std::unique_ptr<ConcatOp> RefBackend::plan_concat(const std::vector<TensorDesc>& srcs, const TensorDesc& dst) {
  return std::make_unique<RefConcatOp>(srcs, dst);
}
std::unique_ptr<DropoutOp> RefBackend::plan_dropout(const TensorDesc& src) {
  return std::make_unique<RefDropoutOp>(src);
}
std::unique_ptr<SoftmaxXentOp> RefBackend::plan_softmax_xent(const TensorDesc& logits) {
  return std::make_unique<RefSoftmaxXentOp>(logits);
}
std::unique_ptr<MseOp> RefBackend::plan_mse(const TensorDesc& pred) { return std::make_unique<RefMseOp>(pred); }

// ---- immediate ops ----------------------------------------------------------------------------
void RefBackend::sgd_step(int64_t n, float lr, float momentum, float weight_decay, bool nesterov,
                          float* weights, const float* grads, float* velocity) {
  ref::sgd_step(n, lr, momentum, weight_decay, nesterov, weights, grads, velocity);
}

void RefBackend::axpby(int64_t n, float a, const float* x, float b, float* y) { ref::axpby(n, a, x, b, y); }

bool RefBackend::scale_check_finite(int64_t n, float a, float* x) {
  bool finite = true;
  for (int64_t i = 0; i < n; ++i) {
    finite &= std::isfinite(x[i]);
    x[i] *= a;
  }
  return finite;
}

}  // namespace ts
