// The backend table: every numerical op a layer or optimizer may call. Layers see only this
// interface (never oneDNN, cuDNN or MPI). `backend/ref` is the naive oracle; `backend/cpu` is
// oneDNN; `backend/cuda` is cuDNN/cuBLAS. Tensors are passed as float pointers; their logical
// content is fp32 NCHW row-major. A backend may compute in another precision (set_precision)
// and may keep an activation in its own layout (see "Activation buffers" below).
//
// Conventions: every output is overwritten (never accumulated into); every buffer that backward
// needs from forward (pool workspace, BN statistics, softmax probabilities) is owned by the caller.
#pragma once

#include <cstddef>
#include <cstdint>
#include <memory>
#include <string>
#include <utility>
#include <vector>

#include "backend/descriptors.h"
#include "core/shape.h"

namespace ts {

enum class Precision { fp32, bf16, fp16, tf32 };
const char* precision_name(Precision p);

// Op groups a backend may or may not support at a given precision.
enum class Op {
  conv, pool, fc, batchnorm, eltwise, softmax_xent, mse, add, concat, dropout, sgd
};
const char* op_name(Op op);

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
  // The libraries the backend computes with, name and version: {"onednn", "2.6.3"}.
  std::vector<std::pair<std::string, std::string>> libraries;
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
  // Compute precision of every following op: fp32, or mixed precision (e.g. bf16 compute with
  // fp32 master weights, optimizer state and loss). Throws ConfigError when the backend does not
  // support `precision` for conv and fc; the caller checks supports() first for a better message.
  virtual void set_precision(Precision precision) = 0;
  virtual Precision precision() const = 0;

  // --- Activation buffers. A buffer the caller registers may hold a tensor in a backend's own
  // layout (blocked channels, bf16 storage) between ops: the backend remembers, per registered
  // address, the layout in which it last wrote it, and the next op uses it directly or reorders.
  // Every other pointer always holds plain fp32 NCHW. Callers (the Net) must: allocate a
  // registered buffer with activation_bytes(), call mark_plain() after writing plain data into
  // it themselves, and make_plain() before reading it themselves. ref keeps everything plain.
  //
  // Bytes an activation (or its diff) of minibatch mb needs so the backend can hold it in any
  // of its layouts (>= mb * numel * 4).
  virtual size_t activation_bytes(int64_t mb, const Shape& per_sample) const {
    return static_cast<size_t>(mb * per_sample.numel()) * sizeof(float);
  }
  virtual void register_buffer(const void* ptr, size_t bytes) {}
  virtual void unregister_buffer(const void* ptr) {}
  // The caller wrote plain fp32 into a registered buffer.
  virtual void mark_plain(const void* ptr) {}
  // Converts a registered buffer of n logical values to plain fp32 in place.
  virtual void make_plain(float* ptr, int64_t n) {}

  // --- convolution: src (mb,ic,ih,iw), wei (oc,ic/g,kh,kw), bia (oc) or null, dst (mb,oc,oh,ow)
  virtual void conv_forward(const ConvDesc& d, const float* src, const float* wei, const float* bia,
                            float* dst) = 0;
  virtual void conv_backward_data(const ConvDesc& d, const float* diff_dst, const float* wei,
                                  float* diff_src) = 0;
  // diff_bia may be null when d.bias is false.
  virtual void conv_backward_weights(const ConvDesc& d, const float* src, const float* diff_dst,
                                     float* diff_wei, float* diff_bia) = 0;

  // --- pooling: src (mb,c,ih,iw) -> dst (mb,c,oh,ow). Max pooling records the argmax in a
  // caller-owned workspace of pool_workspace_bytes(d) bytes (0 for average pooling).
  virtual size_t pool_workspace_bytes(const PoolDesc& d) const = 0;
  virtual void pool_forward(const PoolDesc& d, const float* src, float* dst, void* workspace) = 0;
  virtual void pool_backward(const PoolDesc& d, const float* diff_dst, const void* workspace,
                             float* diff_src) = 0;

  // --- fully connected: src (mb,ic), wei (oc,ic), bia (oc) or null -> dst (mb,oc)
  virtual void fc_forward(const FcDesc& d, const float* src, const float* wei, const float* bia,
                          float* dst) = 0;
  virtual void fc_backward_data(const FcDesc& d, const float* diff_dst, const float* wei,
                                float* diff_src) = 0;
  virtual void fc_backward_weights(const FcDesc& d, const float* src, const float* diff_dst,
                                   float* diff_wei, float* diff_bia) = 0;

  // --- batch norm: src/dst (mb,c,h,w); scale, shift, mean, variance (c).
  // Training: computes batch mean and biased variance into mean/variance (outputs).
  virtual void batchnorm_forward_training(const BnDesc& d, const float* src, const float* scale,
                                          const float* shift, float* dst, float* mean,
                                          float* variance) = 0;
  // Inference: normalises with the given (running) mean/variance.
  virtual void batchnorm_forward_inference(const BnDesc& d, const float* src, const float* scale,
                                           const float* shift, const float* mean,
                                           const float* variance, float* dst) = 0;
  // Backward of the training-mode forward (batch statistics).
  virtual void batchnorm_backward(const BnDesc& d, const float* src, const float* diff_dst,
                                  const float* scale, const float* mean, const float* variance,
                                  float* diff_src, float* diff_scale, float* diff_shift) = 0;

  // --- activations over n floats. Backward gets both src and dst of the forward pass.
  virtual void eltwise_forward(const EltwiseDesc& d, const float* src, float* dst) = 0;
  virtual void eltwise_backward(const EltwiseDesc& d, const float* src, const float* dst,
                                const float* diff_dst, float* diff_src) = 0;

  // --- softmax cross-entropy: logits (mb,classes), labels (mb) in [0,classes).
  // Forward writes probabilities (mb,classes) and returns the mean loss over mb.
  virtual float softmax_xent_forward(int64_t mb, int64_t classes, const float* logits,
                                     const int32_t* labels, float* probs) = 0;
  // diff_logits = (probs - onehot(labels)) / mb.
  virtual void softmax_xent_backward(int64_t mb, int64_t classes, const float* probs,
                                     const int32_t* labels, float* diff_logits) = 0;

  // --- mean-squared error over n values: loss = mean((pred - target)^2).
  virtual float mse_forward(int64_t n, const float* pred, const float* target) = 0;
  // diff_pred = 2 (pred - target) / n.
  virtual void mse_backward(int64_t n, const float* pred, const float* target, float* diff_pred) = 0;

  // --- dst = a + b over n floats (residual connections).
  virtual void add(int64_t n, const float* a, const float* b, float* dst) = 0;
  // dst = max(a + b, 0): the residual add with its ReLU fused (backward is the ReLU's own).
  virtual void add_relu(int64_t n, const float* a, const float* b, float* dst) = 0;
  // dst = src over n values (a backend keeps src's layout): flatten, and the add's backward.
  virtual void copy(int64_t n, const float* src, float* dst) = 0;

  // --- channel concat: srcs[i] (mb, channels[i], hw) -> dst (mb, sum channels, hw).
  virtual void concat_forward(int64_t mb, int64_t hw, const std::vector<int64_t>& channels,
                              const std::vector<const float*>& srcs, float* dst) = 0;
  // The inverse split: diff_dst (mb, sum channels, hw) -> diff_srcs[i] (mb, channels[i], hw).
  virtual void concat_backward(int64_t mb, int64_t hw, const std::vector<int64_t>& channels,
                               const float* diff_dst, const std::vector<float*>& diff_srcs) = 0;

  // --- dropout (forward and backward alike): dst = src * mask * scale; mask is 0/1 per element,
  // generated by the layer from its seeded RNG.
  virtual void dropout_apply(int64_t n, const uint8_t* mask, float scale, const float* src,
                             float* dst) = 0;

  // --- SGD with momentum, Nesterov and decoupled-from-nothing (L2) weight decay over n params:
  //   g' = g + wd * w;  v = momentum * v + g';  w -= lr * (nesterov ? g' + momentum * v : v)
  virtual void sgd_step(int64_t n, float lr, float momentum, float weight_decay, bool nesterov,
                        float* weights, const float* grads, float* velocity) = 0;
};

// Creates a backend by name: "ref" or "cpu" ("cuda" where built). Throws ConfigError for an
// unknown or unavailable name, listing the ones this build has.
std::unique_ptr<Backend> make_backend(const std::string& name);
// Names of the backends compiled into this build.
std::vector<std::string> available_backends();

}  // namespace ts
