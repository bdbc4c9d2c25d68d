// The CUDA backend: cuDNN for convolution, pooling, batch norm and activations, cuBLASLt for
// fully connected layers, own kernels for the rest (cuda_ops.h). One device per process (the
// run's local rank modulo the visible devices), one stream, f32 master weights; activations in
// f32 (fp32, tf32), f16 (fp16) or bf16 (bf16), plain NCHW or, at tf32/fp16/bf16, NHWC
// (cuda_layout.h).
#pragma once

#include <memory>
#include <vector>

#include "backend/backend.h"
#include "backend/device_loss_scaling.h"
#include "backend/graph_capture.h"
#include "backend/input_staging.h"
#include "backend/plan_choices.h"
#include "backend/queue_marks.h"
#include "backend/cuda/cuda_context.h"
#include "backend/cuda/cuda_marks.h"

namespace ts {
class CudaBackend final : public Backend, public InputStaging, public QueueMarks, public GraphCapture,
                          public DeviceLossScaling, public PlanChoices {
 public:
  // Computes on device local_rank % device_count() (the rank's index among the ranks of its
  // node). Throws ConfigError "no CUDA device was found" when there is none.
  explicit CudaBackend(int local_rank = 0);
  ~CudaBackend() override;
  // Number of CUDA devices this process sees (0 when there is no driver or no device).
  static int device_count();

  std::string name() const override { return "cuda"; }
  DeviceDescription describe() const override;
  bool supports(Op op, Precision precision) const override;
  void set_threads(int threads) override {}  // host threads are not the device's
  void set_precision(Precision precision) override;
  Precision precision() const override { return ctx_.precision; }
  void set_workspace_limit(size_t bytes) override { ctx_.workspace_limit = bytes; }
  void set_algorithm_choice(AlgorithmChoice choice) override { ctx_.algorithm_choice = choice; }
  void set_conv_api(ConvApi api, bool reduced_precision_reduction) override {
    ctx_.conv_api = api;
    ctx_.reduced_precision_reduction = reduced_precision_reduction;
  }

  DeviceMemoryUse device_memory() const override;  // cudaMemGetInfo on this device

  DeviceBuffer allocate(size_t bytes) override;
  DeviceBuffer allocate_host(size_t bytes) override;
  void copy_from_host(void* device_dst, const void* host_src, size_t bytes) override;
  void copy_to_host(void* host_dst, const void* device_src, size_t bytes) override;
  void copy(void* device_dst, const void* device_src, size_t bytes) override;
  void fill_zero(void* device_dst, size_t bytes) override;
  void synchronize() override;
  void reorder(const Tensor& src, const Tensor& dst) override;
  // Input staging on a second stream (copy engine) that overlaps compute; an event orders it.
  void stage_from_host(void* device_dst, const void* host_src, size_t bytes) override;
  void wait_for_staged() override;
  void staged_copies_done() override;
  void release_staged() override;
  // Device-to-host copies on the compute stream; marks are a ring of events on it (cuda_marks.h).
  void queue_copy_to_host(void* host_dst, const void* device_src, size_t bytes) override;
  int64_t mark() override;
  void wait_for_mark(int64_t mark) override;
  // CUDA graphs: stream capture (relaxed mode) into an instantiated graph per recording.
  void begin_capture() override;
  int end_capture() override;
  void replay(int capture) override;
  void release_capture(int capture) override;

  TS_BACKEND_OP_OVERRIDES;
  void unscale_check(int64_t n, LossScaleState* state, float* x) override;
  void sgd_step_if_finite(const LossScaleState* state, int64_t n, float lr, float momentum, float weight_decay,
                          bool nesterov, float* weights, const float* grads, float* velocity) override;
  void update_loss_scale(LossScaleState* state, const LossScaleRule& rule) override;
  std::vector<std::string> plan_notes() const override { return ctx_.plan_notes; }
  void drop_plan_notes(size_t keep) override {
    if (ctx_.plan_notes.size() > keep) ctx_.plan_notes.resize(keep);
  }
  size_t workspace_bytes() const override { return ctx_.workspace_bytes(); }

  // The stream every op and copy of this backend is queued on (NCCL orders against it).
  cudaStream_t stream() const { return ctx_.stream; }
  int device() const { return ctx_.device; }

 protected:
  void release(void* data, size_t bytes, bool host) override;

 private:
  cuda::CudaContext ctx_;
  int* nonfinite_ = nullptr;  // device flag of scale_check_finite
  cudaStream_t staging_stream_ = nullptr;  // stage_from_host's copies
  cudaEvent_t staged_ = nullptr;           // recorded after the latest staged copy
  cudaEvent_t staged_released_ = nullptr;  // recorded on the compute stream by release_staged
  std::unique_ptr<cuda::StreamMarks> marks_;
  void destroy_staging();
  std::vector<cudaGraphExec_t> captures_;  // by id; null once released
};

}  // namespace ts
