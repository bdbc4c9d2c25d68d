// The planned ops of the backend table (Backend::plan_*). Plan once, execute many: an op is
// planned for one descriptor (backend/descriptors.h) and the descs of its tensors, and then
// only executes. Everything the op needs between calls (library primitives, algorithm choice,
// reorders, temporaries) belongs to the op object.
//
// Tensor descs at plan time:
// * inputs have fixed descs (whatever produced them);
// * an output may be requested as "any" (TensorDesc::any: the backend chooses; dst_desc() says
//   what it chose) or with a fixed desc, which the op honours, reordering inside itself if its
//   primitive prefers another layout;
// * backward tensors take their forward counterparts' descs: diff_dst has dst's, diff_src has
//   src's (so a tensor and its gradient always share a layout).
// Parameters (weights, biases, BN scale/shift, statistics) are plain f32 arrays in device memory
// (slices of the net's arenas). Every output is overwritten, never accumulated into. Tensors
// passed at execution must have the descs the op was planned with. A backward call reads the
// tensors of the op's latest forward (src, weights, workspaces), which must not change in
// between: an op may reuse what its forward converted.
#pragma once

#include <cstdint>
#include <vector>

#include "backend/tensor.h"

namespace ts {

// What every op with an output shares: the desc its output takes (the request, or the backend's
// choice for "any"), which the op sets when it is planned.
class PlannedOutput {
 public:
  virtual ~PlannedOutput() = default;
  const TensorDesc& dst_desc() const { return dst_; }

 protected:
  TensorDesc dst_;
};

// Convolution: src (mb,ic,ih,iw), wei (oc,ic/g,kh,kw), bia (oc) -> dst (mb,oc,oh,ow)
// (relu'd when the ConvDesc says relu; backward is the convolution's alone).
class ConvOp : public PlannedOutput {
 public:
  virtual void forward(const Tensor& src, const float* wei, const float* bia, const Tensor& dst) = 0;
  // From diff_dst and the latest forward's src and weights (unchanged since): diff_wei
  // (oc,ic/g,kh,kw), diff_bia (oc; null without bias) and, unless diff_src has no data, diff_src.
  virtual void backward(const Tensor& src, const Tensor& diff_dst, const float* wei, const Tensor& diff_src,
                        float* diff_wei, float* diff_bia) = 0;
};

// Pooling: src (mb,c,ih,iw) -> dst (mb,c,oh,ow). Max pooling records the argmax in a workspace of
// workspace_bytes() that the caller owns (device memory; 0 bytes for average pooling).
class PoolOp : public PlannedOutput {
 public:
  virtual size_t workspace_bytes() const = 0;
  virtual void forward(const Tensor& src, const Tensor& dst, void* workspace) = 0;
  virtual void backward(const Tensor& diff_dst, const void* workspace, const Tensor& diff_src) = 0;
};

// Fully connected: src (mb,ic) (or (mb,c,h,w), ic = c*h*w), wei (oc,ic), bia (oc) or null ->
// dst (mb,oc).
class FcOp : public PlannedOutput {
 public:
  virtual void forward(const Tensor& src, const float* wei, const float* bia, const Tensor& dst) = 0;
  // As ConvOp::backward: diff_wei (oc,ic), diff_bia (oc) and, if it has data, diff_src.
  virtual void backward(const Tensor& src, const Tensor& diff_dst, const float* wei, const Tensor& diff_src,
                        float* diff_wei, float* diff_bia) = 0;
};

// Batch normalisation per channel over (mb,h,w): src/dst (mb,c,h,w); scale, shift, mean,
// variance (c). Variance is the biased batch variance (divide by mb*h*w).
class BatchNormOp : public PlannedOutput {
 public:
  // Batch statistics into mean/variance (outputs), then normalise [and ReLU if planned so].
  virtual void forward_training(const Tensor& src, const float* scale, const float* shift,
                                const Tensor& dst, float* mean, float* variance) = 0;
  // Normalise with the given (running) statistics.
  virtual void forward_inference(const Tensor& src, const float* scale, const float* shift,
                                 const float* mean, const float* variance, const Tensor& dst) = 0;
  // Backward of forward_training (a fused ReLU's backward ran before, in the ReLU layer).
  virtual void backward(const Tensor& src, const Tensor& diff_dst, const float* scale,
                        const float* mean, const float* variance, const Tensor& diff_src,
                        float* diff_scale, float* diff_shift) = 0;
};

// Element-wise activation, src -> dst of the same shape; backward gets both src and dst.
class EltwiseOp : public PlannedOutput {
 public:
  virtual void forward(const Tensor& src, const Tensor& dst) = 0;
  virtual void backward(const Tensor& src, const Tensor& dst, const Tensor& diff_dst,
                        const Tensor& diff_src) = 0;
};

// dst = a + b, or max(a + b, 0) when planned with relu (a residual add with its ReLU fused;
// backward is the ReLU's own). dst takes a's desc.
class AddOp : public PlannedOutput {
 public:
  virtual void forward(const Tensor& a, const Tensor& b, const Tensor& dst) = 0;
};

// Channel concatenation: srcs[i] (mb,c_i,h,w) -> dst (mb, sum c_i, h, w); backward splits
// diff_dst into diff_srcs[i] (each with srcs[i]'s desc; a null data pointer skips that input).
class ConcatOp : public PlannedOutput {
 public:
  virtual void forward(const std::vector<Tensor>& srcs, const Tensor& dst) = 0;
  virtual void backward(const Tensor& diff_dst, const std::vector<Tensor>& diff_srcs) = 0;
};

// Dropout with an explicit mask: dst = src * mask * scale; mask (numel bytes of 0/1, device
// memory, in the logical (row-major) order of the tensor) is drawn by the layer; backward applies
// the same to diff_dst. dst is plain.
class DropoutOp : public PlannedOutput {
 public:
  virtual void forward(const uint8_t* mask, float scale, const Tensor& src, const Tensor& dst) = 0;
  virtual void backward(const uint8_t* mask, float scale, const Tensor& diff_dst,
                        const Tensor& diff_src) = 0;
};

// The factor a loss's backward multiplies its gradient by (fp16 loss scaling, unequal shares; 1
// otherwise): `factor`, times *device_factor when given (device memory: the scale the device
// decides under loss_reads: log, backend/loss_scale_state.h). Backends that compute in host
// memory read it at once (value()); the product is rounded once, as on the device.
struct LossGradScale {
  LossGradScale(float factor = 1.0f, const float* device_factor = nullptr)  // NOLINT: a plain factor converts
      : factor(factor), device_factor(device_factor) {}
  float factor;
  const float* device_factor;
  float value() const { return device_factor ? factor * *device_factor : factor; }
};

// Softmax cross-entropy: logits (mb,classes), labels (mb) int32 in [0,classes) -> probs
// (mb,classes) plain f32 and the mean loss into loss[0] (device memory); backward writes
// diff_logits = loss_scale * (probs - onehot(labels)) / mb.
class SoftmaxXentOp {
 public:
  virtual ~SoftmaxXentOp() = default;
  virtual void forward(const Tensor& logits, const int32_t* labels, float* probs, float* loss) = 0;
  virtual void backward(const float* probs, const int32_t* labels, const LossGradScale& loss_scale,
                        const Tensor& diff_logits) = 0;
};

// Mean-squared error over all n values of pred: loss[0] = mean((pred - target)^2); backward
// diff_pred = loss_scale * 2 (pred - target) / n. target is plain f32.
class MseOp {
 public:
  virtual ~MseOp() = default;
  virtual void forward(const Tensor& pred, const float* target, float* loss) = 0;
  virtual void backward(const Tensor& pred, const float* target, const LossGradScale& loss_scale,
                        const Tensor& diff_pred) = 0;
};

}  // namespace ts
