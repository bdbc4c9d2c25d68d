// The oneDNN CPU backend: every op of the backend table as a oneDNN 2.6 primitive (or a short
// OpenMP loop where oneDNN has nothing better: dropout, sgd, mse, the concat split, the
// cross-entropy on top of oneDNN's softmax). Primitives are planned once per descriptor, layout
// and precision and cached in this object (format_tag::any: oneDNN's blocked layouts, kept
// between ops in registered buffers; fused ReLUs; bf16 mixed precision; user scratchpad); one
// engine and one stream per object, no globals. oneDNN stays behind a pimpl so that this header
// never includes it. cpu_backend.cpp describes the layout and precision rules.
#pragma once

#include <memory>

#include "backend/backend.h"

namespace ts {

class CpuBackend final : public Backend {
 public:
  CpuBackend();
  ~CpuBackend() override;
  CpuBackend(const CpuBackend&) = delete;
  CpuBackend& operator=(const CpuBackend&) = delete;

  std::string name() const override { return "cpu"; }
  // oneDNN's version and ISA, the CPU model, RAM and hardware threads.
  DeviceDescription describe() const override;
  bool supports(Op op, Precision precision) const override;
  void set_threads(int threads) override;  // omp_set_num_threads
  void set_precision(Precision precision) override;
  Precision precision() const override { return precision_; }

  size_t activation_bytes(int64_t mb, const Shape& per_sample) const override;
  void register_buffer(const void* ptr, size_t bytes) override;
  void unregister_buffer(const void* ptr) override;
  void mark_plain(const void* ptr) override;
  void make_plain(float* ptr, int64_t n) override;

  // Reorders executed so far (tests and benchmarks count them per training step): activations
  // (a tensor changing layout or data type between ops, or at the net's edges) and weights
  // (fp32 master weights into a primitive's layout/bf16, weight gradients back to plain fp32).
  struct ReorderCounts {
    int64_t activations = 0;
    int64_t weights = 0;
  };
  ReorderCounts reorder_counts() const;

  void conv_forward(const ConvDesc& d, const float* src, const float* wei, const float* bia,
                    float* dst) override;
  void conv_backward_data(const ConvDesc& d, const float* diff_dst, const float* wei,
                          float* diff_src) override;
  void conv_backward_weights(const ConvDesc& d, const float* src, const float* diff_dst,
                             float* diff_wei, float* diff_bia) override;

  // Max pooling workspace: oneDNN's own, sized from the primitive descriptor's workspace desc.
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
 private:
  struct Impl;  // engine, stream, plans, layouts (cpu_backend.cpp)
  std::unique_ptr<Impl> impl_;
  Precision precision_ = Precision::fp32;
};

}  // namespace ts
