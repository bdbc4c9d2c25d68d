// A DAG network: nodes are layers in topological (insertion) order; each node reads the
// outputs of earlier nodes. Sequential nets, residual adds and channel concats all fit.
// Parameters and their gradients live in two flat arenas (one allocation each), so zeroing,
// all-reduce buckets and checkpoints are pointer ranges.
#pragma once

#include <cstdint>
#include <functional>
#include <memory>
#include <string>
#include <vector>

#include "backend/backend.h"
#include "core/buffer.h"
#include "core/shape.h"
#include "nn/layer.h"

namespace ts {

enum class Mode { train, inference };

// One row of the model's layer table (HDF5 /model).
struct LayerInfo {
  std::string name;        // "conv1"
  std::string kind;        // "conv", "pool", "fc", "bn", "relu", ...
  std::string descriptor;  // backend descriptor string at batch 1, e.g. conv:mb1_ic1oc32_...
  int64_t parameters = 0;
  int64_t flops = 0;       // forward FLOPs per sample
};

// A contiguous range of the parameter/gradient arenas that belongs to one layer, in backward
// order of availability (used for bucketing gradients during backward).
struct ParamRange {
  int64_t offset = 0;
  int64_t count = 0;
};

class Net {
 public:
  explicit Net(Backend& backend);
  ~Net();
  Net(const Net&) = delete;
  Net& operator=(const Net&) = delete;

  // ---- building (models/*.cpp) ----
  // The net input: per-sample shape (C,H,W) or (features). Returns its node id.
  int input(Shape per_sample);
  // Adds a layer reading the given nodes; returns the new node id.
  int add(std::unique_ptr<Layer> layer, std::vector<int> inputs);
  // Marks the loss node (softmax cross-entropy or MSE), which must be the last node added.
  // Allocates the arenas and initialises parameters from `seed` (He/Xavier per layer).
  void finalize(uint64_t seed);

  // ---- running ----
  // (Re)allocates activations for minibatch `mb` (no-op when unchanged).
  void set_batch(int64_t mb);
  int64_t batch() const { return batch_; }
  // images: (mb, per-sample); labels: (mb) class ids for cross-entropy, or targets: (mb, outputs)
  // for MSE (the other may be null). Returns the mean loss of the minibatch.
  float forward(const float* images, const int32_t* labels, const float* targets, Mode mode);
  // Backward from the loss through every layer; overwrites the gradient arena.
  // `on_layer_grads(range)` is called as soon as a layer's parameter gradients are final
  // (in reverse layer order), so communication can overlap with the rest of backward.
  void backward(const std::function<void(ParamRange)>& on_layer_grads = nullptr);
  // The output of the node feeding the loss: logits (mb, classes) or predictions (mb, outputs).
  const float* output() const;
  Shape output_shape() const;  // per sample
  // Loss node kind: true for cross-entropy (classification), false for MSE (regression).
  bool is_classifier() const;

  // ---- parameters ----
  float* params() { return params_.data(); }
  float* grads() { return grads_.data(); }
  int64_t param_count() const { return static_cast<int64_t>(params_.size()); }
  // Non-trainable state that must stay consistent across workers (BN running mean/var).
  float* state() { return state_.data(); }
  int64_t state_count() const { return static_cast<int64_t>(state_.size()); }
  std::vector<LayerInfo> layer_table() const;
  int64_t flops_per_sample() const;
  Backend& backend() { return backend_; }

 private:
  struct Node;
  Backend& backend_;
  std::vector<std::unique_ptr<Node>> nodes_;
  Buffer<float> params_, grads_, state_;
  int64_t batch_ = 0;
  bool finalized_ = false;
};

}  // namespace ts
