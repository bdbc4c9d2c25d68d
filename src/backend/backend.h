// The backend table: the device a net computes on and every numerical op a layer or optimizer
// may call. Layers see only this interface (never oneDNN, cuDNN or MPI). `backend/ref` is the
// naive oracle; `backend/cpu` is oneDNN; `backend/cuda` is cuDNN/cuBLAS.
//
// A backend owns
// * memory: allocate (device memory, zeroed), allocate_host (host memory the device copies from
//   fast: pinned for cuda), copies host<->device and device<->device, zeroing;
// * one in-order queue of work (its stream): ops and copies run in call order; synchronize()
//   waits for all of it; copy_to_host waits for the work before it. CPU backends execute each
//   call before returning;
// * planning: plan_* (backend/ops.h) turn a descriptor and tensor descs into an executable op
//   whose layouts and algorithms are fixed; reorder() converts a tensor between descs;
// * immediate ops on plain f32 arrays (optimizer, statistics);
// * describe(): the device facts that `trainscale info` prints and the run file records, and
//   supports(): the capability questions (op x precision) that callers ask instead of assuming.
// What only some backends can do is an interface of its own, one per file, that a backend
// implements besides this table and that callers ask for once, at set-up (capability<C> below):
// input_staging.h, queue_marks.h, graph_capture.h, device_loss_scaling.h, plan_choices.h.
#pragma once

#include <cstddef>
#include <cstdint>
#include <memory>
#include <string>
#include <utility>
#include <vector>

#include "backend/descriptors.h"
#include "backend/device_buffer.h"
#include "backend/ops.h"
#include "backend/tensor.h"
#include "core/error.h"

namespace ts {

// Compute precision of a run: fp32, tf32 (fp32 tensors, tf32 tensor-core math), or mixed
// precision bf16 / fp16 (low-precision activations and compute, fp32 master weights, optimizer
// state and loss).
enum class Precision { fp32, bf16, fp16, tf32 };
const char* precision_name(Precision p);

// How a backend chooses among its libraries' algorithms (cuda.algorithms; cuDNN convolutions):
// find benchmarks them at plan time and takes the fastest, so two processes may choose
// differently; heuristic takes the library's own ranking (the same choice for the same device
// and library); deterministic takes the best-ranked algorithm whose results are bit-reproducible
// (no atomics), which a bit-exact resume from a checkpoint needs.
enum class AlgorithmChoice { find, heuristic, deterministic };
const char* algorithm_choice_name(AlgorithmChoice c);
std::vector<AlgorithmChoice> all_algorithm_choices();

// Which API a backend plans convolutions with (cuda.conv_api; cuDNN): legacy, the
// cudnnConvolution* calls and their algorithm enums; graph, the backend (graph) API's engines, as
// PyTorch plans them (backend/cuda/cuda_conv_graph.h), with the legacy API where no engine fits.
enum class ConvApi { legacy, graph };
const char* conv_api_name(ConvApi api);
std::vector<ConvApi> all_conv_apis();

// Op groups a backend may or may not support at a given precision.
enum class Op {
  conv, pool, fc, batchnorm, eltwise, softmax_xent, mse, add, concat, dropout, sgd
};

// Facts about the device a backend computes on, from Backend::describe(): `trainscale info`
// prints them and every run file records them (root attributes device, device_name, isa, ...).
struct DeviceDescription {
  std::string backend;          // "ref", "cpu", "cuda"
  std::string device;           // "cpu", or "cuda:0"
  std::string name;             // the CPU model or the GPU's name
  std::string isa;              // oneDNN's ISA ("avx512_core_bf16"), "generic" (ref), "sm_90" (cuda)
  std::string generation;       // GPU generation ("a100", "h100", ...); "none" on CPU backends
  int64_t memory_bytes = 0;     // memory the device computes in (host RAM for CPU backends)
  int64_t compute_units = 0;    // hardware threads (CPU) or streaming multiprocessors (GPU)
  bool bf16_native = false;     // bf16 arithmetic in hardware (not emulated)
  bool host_accessible = true;  // the host may read and write the device's memory directly
  // Device collective libraries this backend can drive for dist.allreduce ("nccl" for cuda);
  // the MPI algorithms work on any host-accessible memory and are not listed.
  std::vector<std::string> collectives;
  // The libraries the backend computes with, name and version: {"onednn", "2.6.3"}.
  std::vector<std::pair<std::string, std::string>> libraries;
};

// Every backend name a configuration may ask for, built into this binary or not (the factory,
// backend/backend_factory.h, says which are built): "ref", "cpu", "cuda".
std::vector<std::string> known_backends();

// Thrown by a backend's constructor when the backend is built but this machine has no device
// for it (cuda without a GPU or driver). A ConfigError (exit 2) for runs; callers that only ask
// questions (`trainscale info`, capability checks) catch it and report `reason`.
class NoDeviceError : public ConfigError {
 public:
  NoDeviceError(const std::string& message, std::string reason) : ConfigError(message), reason(std::move(reason)) {}
  std::string reason;  // why no device was found, e.g. the driver's error string
};

// The device's memory as its driver reports it now (every process's allocations, the
// libraries' and the context's included). All zero for backends that compute in host memory.
struct DeviceMemoryUse {
  int64_t used = 0;   // total - free
  int64_t free = 0;
  int64_t total = 0;
  int devices = 0;    // devices of this kind the process sees (ranks of a node share them)
};

class Backend {
 public:
  virtual ~Backend() = default;
  virtual std::string name() const = 0;
  // The device this backend computes on (no side effects; cheap enough to call once per run).
  virtual DeviceDescription describe() const = 0;
  virtual bool supports(Op op, Precision precision) const = 0;
  // Compute threads this backend uses (oneDNN/OpenMP threads for cpu; 1 for ref).
  virtual void set_threads(int threads) = 0;
  // Compute precision of every op planned from now on. Throws ConfigError when the backend does
  // not support `precision` for conv and fc; callers check supports() first for a better message.
  virtual void set_precision(Precision precision) = 0;
  virtual Precision precision() const = 0;

  // ---- memory and the queue ----
  // `bytes` of device memory, zeroed. Throws RuntimeError when the device is out of memory.
  virtual DeviceBuffer allocate(size_t bytes) = 0;
  // Host memory for staging transfers (pinned where that matters), zeroed.
  virtual DeviceBuffer allocate_host(size_t bytes) = 0;
  virtual void copy_from_host(void* device_dst, const void* host_src, size_t bytes) = 0;
  virtual void copy_to_host(void* host_dst, const void* device_src, size_t bytes) = 0;
  virtual void copy(void* device_dst, const void* device_src, size_t bytes) = 0;
  virtual void fill_zero(void* device_dst, size_t bytes) = 0;
  virtual void synchronize() = 0;
  // Converts src into dst's desc (same logical dims; layouts and data types may differ).
  virtual void reorder(const Tensor& src, const Tensor& dst) = 0;

  // ---- planning (backend/ops.h). Throws ConfigError for a descriptor the backend cannot plan,
  // naming it. `dst` requests the output's desc (TensorDesc::any: the backend chooses).
  virtual std::unique_ptr<ConvOp> plan_conv(const ConvDesc& d, const TensorDesc& src,
                                            const TensorDesc& dst) = 0;
  virtual std::unique_ptr<PoolOp> plan_pool(const PoolDesc& d, const TensorDesc& src,
                                            const TensorDesc& dst) = 0;
  virtual std::unique_ptr<FcOp> plan_fc(const FcDesc& d, const TensorDesc& src,
                                        const TensorDesc& dst) = 0;
  virtual std::unique_ptr<BatchNormOp> plan_batchnorm(const BnDesc& d, const TensorDesc& src,
                                                      const TensorDesc& dst) = 0;
  virtual std::unique_ptr<EltwiseOp> plan_eltwise(const EltwiseDesc& d, const TensorDesc& src,
                                                  const TensorDesc& dst) = 0;
  virtual std::unique_ptr<AddOp> plan_add(const TensorDesc& a, const TensorDesc& b, bool relu) = 0;
  // Concatenates along dims[1] (channels).
  virtual std::unique_ptr<ConcatOp> plan_concat(const std::vector<TensorDesc>& srcs,
                                                const TensorDesc& dst) = 0;
  virtual std::unique_ptr<DropoutOp> plan_dropout(const TensorDesc& src) = 0;
  // logits (mb, classes) in any desc.
  virtual std::unique_ptr<SoftmaxXentOp> plan_softmax_xent(const TensorDesc& logits) = 0;
  virtual std::unique_ptr<MseOp> plan_mse(const TensorDesc& pred) = 0;

  // ---- immediate ops on plain f32 device arrays ----
  // SGD with momentum, Nesterov and L2 weight decay over n params:
  //   g' = g + wd * w;  v = momentum * v + g';  w -= lr * (nesterov ? g' + momentum * v : v)
  virtual void sgd_step(int64_t n, float lr, float momentum, float weight_decay, bool nesterov,
                        float* weights, const float* grads, float* velocity) = 0;
  // y = a * x + b * y over n values (BN running statistics).
  virtual void axpby(int64_t n, float a, const float* x, float b, float* y) = 0;
  // x *= a over n values; returns false when some value of x was not finite (inf or NaN)
  // before scaling: fp16 training unscales its gradients and detects an overflow in one pass.
  // Waits for the result (a host synchronisation).
  virtual bool scale_check_finite(int64_t n, float a, float* x) = 0;

  // The device's memory now (train/device_memory_estimate.h); host backends: all zero.
  virtual DeviceMemoryUse device_memory() const { return {}; }

 protected:
  friend class DeviceBuffer;
  // Gives back memory from allocate / allocate_host.
  virtual void release(void* data, size_t bytes, bool host) = 0;
};

// The planners and the optimizer math of the op table, as every backend declares them (in its
// public section, defined in its .cpp): TS_BACKEND_OP_OVERRIDES;
#define TS_BACKEND_OP_OVERRIDES                                                                                    \
  std::unique_ptr<ConvOp> plan_conv(const ConvDesc& d, const TensorDesc& src, const TensorDesc& dst) override;     \
  std::unique_ptr<PoolOp> plan_pool(const PoolDesc& d, const TensorDesc& src, const TensorDesc& dst) override;     \
  std::unique_ptr<FcOp> plan_fc(const FcDesc& d, const TensorDesc& src, const TensorDesc& dst) override;           \
  std::unique_ptr<BatchNormOp> plan_batchnorm(const BnDesc& d, const TensorDesc& src, const TensorDesc& dst)      \
      override;                                                                                                  \
  std::unique_ptr<EltwiseOp> plan_eltwise(const EltwiseDesc& d, const TensorDesc& src, const TensorDesc& dst)     \
      override;                                                                                                  \
  std::unique_ptr<AddOp> plan_add(const TensorDesc& a, const TensorDesc& b, bool relu) override;                  \
  std::unique_ptr<ConcatOp> plan_concat(const std::vector<TensorDesc>& srcs, const TensorDesc& dst) override;     \
  std::unique_ptr<DropoutOp> plan_dropout(const TensorDesc& src) override;                                        \
  std::unique_ptr<SoftmaxXentOp> plan_softmax_xent(const TensorDesc& logits) override;                            \
  std::unique_ptr<MseOp> plan_mse(const TensorDesc& pred) override;                                               \
  void sgd_step(int64_t n, float lr, float momentum, float weight_decay, bool nesterov, float* weights,            \
                const float* grads, float* velocity) override;                                                    \
  void axpby(int64_t n, float a, const float* x, float b, float* y) override;                                     \
  bool scale_check_finite(int64_t n, float a, float* x) override

// The optional capability C of `backend` (InputStaging, QueueMarks, GraphCapture,
// DeviceLossScaling, PlanChoices), or null when the backend has none.
template <class C>
C* capability(Backend& backend) {
  return dynamic_cast<C*>(&backend);
}

}  // namespace ts
