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

// Mode and LayerInfo are declared in nn/layer.h.

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
  // Runs the layer's setup() on the inputs' shapes (ConfigError when they do not fit); a layer
  // with an empty name is named "<kind><node id>".
  int add(std::unique_ptr<Layer> layer, std::vector<int> inputs);
  // Per-sample output shape of a node (the input node's shape for the input).
  Shape node_shape(int node) const;
  int node_count() const { return static_cast<int>(nodes_.size()); }
  // The layer of a node (null for the input node).
  Layer* layer(int node);
  // Output (mb, node_shape) of a node after forward, plain fp32 (the backend converts it from
  // its own layout if needed). A conv / batch norm / add whose ReLU was fused holds the ReLU'd
  // values (it shares its buffer with the ReLU node).
  const float* node_output(int node) const;
  // Fusion of a ReLU into the node it reads (conv, batch norm, add), decided at finalize; on by
  // default. Call before finalize. fused(node): that ReLU node is computed by its input's forward.
  void set_fusion(bool enabled);
  bool fused(int node) const;
  // Parameter range of a node's layer in the arenas (count 0 for layers without parameters).
  ParamRange param_range(int node) const;
  // Marks the loss node (softmax cross-entropy or MSE), which must be the last node added.
  // Allocates the arenas and initialises parameters from `seed` (He/Xavier per layer).
  void finalize(uint64_t seed);

  // ---- running ----
  // (Re)allocates activations for minibatch `mb` (no-op when unchanged).
  void set_batch(int64_t mb);
  int64_t batch() const { return batch_; }
  // images: (mb, per-sample), copied into the net; labels: (mb) class ids for cross-entropy, or targets: (mb, outputs)
  // for MSE (the other may be null). Returns the mean loss of the minibatch; with both null
  // (prediction only) the loss is not computed and 0 is returned.
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
  float* params() { return params_ext_ ? params_ext_ : params_.data(); }
  float* grads() { return grads_ext_ ? grads_ext_ : grads_.data(); }
  // Moves the parameter and/or gradient arena (null: keep it) into caller-owned memory of
  // param_count() floats that outlives the net (e.g. shared memory that other processes read,
  // dist/allreduce.h allocate_shared_floats), contents copied (the weights only if
  // `copy_params`: memory several nets share gets them from one): layers read their weights
  // and write their gradients there from now on. After finalize.
  void use_arena_storage(float* params, float* grads, bool copy_params = true);
  int64_t param_count() const { return param_count_; }
  // Non-trainable state that must stay consistent across workers (BN running mean/var).
  float* state() { return state_.data(); }
  int64_t state_count() const { return static_cast<int64_t>(state_.size()); }
  // One row per layer (the loss included), in node order.
  std::vector<LayerInfo> layer_table() const;
  int64_t flops_per_sample() const;
  Backend& backend() { return backend_; }

 private:
  struct Node;
  // The buffer holding a node's output (a fused ReLU's is its input's).
  float* node_dst(int node);
  void release_buffers();  // unregisters every buffer from the backend
  void bind_layers();      // points every layer at its slices of params(), grads(), state()
  Backend& backend_;
  std::vector<std::unique_ptr<Node>> nodes_;
  Buffer<float> params_, grads_, state_;
  int64_t param_count_ = 0;
  float* params_ext_ = nullptr;  // use_arena_storage's memory, replacing params_
  float* grads_ext_ = nullptr;   // use_arena_storage's memory, replacing grads_
  std::vector<Buffer<float>> scratch_;  // diff targets for nodes already holding a diff
  int64_t batch_ = 0;
  bool finalized_ = false;
  bool fusion_ = true;
  bool last_forward_train_ = false;
};

}  // namespace ts
