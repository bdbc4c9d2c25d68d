// The reference backend: naive, obviously-correct loops for every op of the backend table.
// It is the test oracle for every other backend, never the fast path. fp32 only; single thread;
// sums accumulate in double so that its results are the more accurate side of any comparison.
#pragma once

#include "backend/backend.h"

namespace ts {

class RefBackend final : public Backend {
 public:
  std::string name() const override { return "ref"; }
  DeviceDescription describe() const override;
  bool supports(Op op, Precision precision) const override;
  void set_threads(int threads) override {}  // always one thread
  void set_precision(Precision precision) override;  // fp32 only: the oracle
  Precision precision() const override { return Precision::fp32; }

  void conv_forward(const ConvDesc& d, const float* src, const float* wei, const float* bia,
                    float* dst) override;
  void conv_backward_data(const ConvDesc& d, const float* diff_dst, const float* wei,
                          float* diff_src) override;
  void conv_backward_weights(const ConvDesc& d, const float* src, const float* diff_dst,
                             float* diff_wei, float* diff_bia) override;

  // Max pooling workspace: one int32 per dst element, the argmax as ih * iw + iw (the offset
  // inside its (n,c) input plane).
  size_t pool_workspace_bytes(const PoolDesc& d) const override;
  void pool_forward(const PoolDesc& d, const float* src, float* dst, void* workspace) override;
  void pool_backward(const PoolDesc& d, const float* diff_dst, const void* workspace,
                     float* diff_src) override;

  void fc_forward(const FcDesc& d, const float* src, const float* wei, const float* bia,
                  float* dst) override;
  void fc_backward_data(const FcDesc& d, const float* diff_dst, const float* wei,
                        float* diff_src) override;
  void fc_backward_weights(const FcDesc& d, const float* src, const float* diff_dst,
                           float* diff_wei, float* diff_bia) override;

  void batchnorm_forward_training(const BnDesc& d, const float* src, const float* scale,
                                  const float* shift, float* dst, float* mean,
                                  float* variance) override;
  void batchnorm_forward_inference(const BnDesc& d, const float* src, const float* scale,
                                   const float* shift, const float* mean, const float* variance,
                                   float* dst) override;
  void batchnorm_backward(const BnDesc& d, const float* src, const float* diff_dst,
                          const float* scale, const float* mean, const float* variance,
                          float* diff_src, float* diff_scale, float* diff_shift) override;

  void eltwise_forward(const EltwiseDesc& d, const float* src, float* dst) override;
  void eltwise_backward(const EltwiseDesc& d, const float* src, const float* dst,
                        const float* diff_dst, float* diff_src) override;

  float softmax_xent_forward(int64_t mb, int64_t classes, const float* logits,
                             const int32_t* labels, float* probs) override;
  void softmax_xent_backward(int64_t mb, int64_t classes, const float* probs,
                             const int32_t* labels, float* diff_logits) override;

  float mse_forward(int64_t n, const float* pred, const float* target) override;
  void mse_backward(int64_t n, const float* pred, const float* target, float* diff_pred) override;

  void add(int64_t n, const float* a, const float* b, float* dst) override;
  void add_relu(int64_t n, const float* a, const float* b, float* dst) override;
  void copy(int64_t n, const float* src, float* dst) override;

  void concat_forward(int64_t mb, int64_t hw, const std::vector<int64_t>& channels,
                      const std::vector<const float*>& srcs, float* dst) override;
  void concat_backward(int64_t mb, int64_t hw, const std::vector<int64_t>& channels,
                       const float* diff_dst, const std::vector<float*>& diff_srcs) override;

  void dropout_apply(int64_t n, const uint8_t* mask, float scale, const float* src,
                     float* dst) override;

  void sgd_step(int64_t n, float lr, float momentum, float weight_decay, bool nesterov,
                float* weights, const float* grads, float* velocity) override;
};

}  // namespace ts
