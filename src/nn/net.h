// A DAG network: nodes are layers in topological (insertion) order; each node reads the
// outputs of earlier nodes. Sequential nets, residual adds and channel concats all fit.
// Parameters and their gradients live in two flat arenas (one device allocation each), so
// zeroing, all-reduce buckets and checkpoints are pointer ranges.
//
// Execution is planned once per minibatch size (set_batch): every layer plans its backend ops
// for the descs its inputs were planned with (the oneDNN training example's way: primitives
// with their arguments, layouts fixed at plan time, reorders only where layouts differ), the
// net allocates each node's output and gradient in the planned desc, and forward/backward only
// execute. The net is the edge between host and device: images, labels and targets come from
// the host; output() and node_output() go back to it as plain fp32.
#pragma once

#include <array>
#include <cstdint>
#include <functional>
#include <memory>
#include <string>
#include <utility>
#include <vector>

#include "backend/backend.h"
#include "backend/graph_capture.h"
#include "backend/input_staging.h"
#include "backend/queue_marks.h"
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
  // Asks `backend` once for the capabilities it runs with (backend.h capability<>).
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
  // The nodes a node reads, in input order (empty for the input node).
  const std::vector<int>& node_inputs(int node) const;
  // The layer of a node (null for the input node).
  Layer* layer(int node);
  // Fusion of a ReLU into the node it reads (conv, batch norm, add), decided at finalize; on by
  // default. Call before finalize. fused(node): that ReLU node is computed by its input's forward.
  void set_fusion(bool enabled);
  bool fused(int node) const;
  // Parameter range of a node's layer in the arenas (count 0 for layers without parameters).
  ParamRange param_range(int node) const;
  // Checks that the last node is a loss (softmax cross-entropy or MSE), allocates the arenas
  // and initialises parameters from `seed` (He/Xavier per layer, on the host, then copied).
  void finalize(uint64_t seed);

  // ---- running ----
  // Plans execution for minibatch `mb` and allocates its activations (no-op when unchanged).
  void set_batch(int64_t mb);
  int64_t batch() const { return batch_; }
  // images: (mb, per-sample) in host memory, copied to the device; labels: (mb) class ids for
  // cross-entropy, or targets: (mb, outputs) for MSE (the other may be null). Returns the mean
  // loss of the minibatch (read back from the device); with both null (prediction only) the
  // loss is not computed and 0 is returned.
  float forward(const float* images, const int32_t* labels, const float* targets, Mode mode);
  // The same in two halves, for a trainer that overlaps the next batch's input copy with this
  // forward and queues backward before it reads the loss: forward_queued queues the work (images
  // null: the input staged by stage_input) and a copy of the loss to the host, and returns
  // without waiting for the device; loss() then waits for that copy only (work queued after
  // forward keeps running) and returns the loss.
  void forward_queued(const float* images, const int32_t* labels, const float* targets, Mode mode);
  float loss() const { return loss_of(last_loss_id()); }
  // The losses forward_queued copied are numbered 1, 2, ... (last_loss_id: the latest, 0 before
  // the first); each lands in its own host slot, and the latest kLossSlots stay readable, so a
  // trainer may read many steps' losses at once (loss_reads: log). loss_of(id) waits for that
  // loss's copy only. Throws for an id no longer (or not yet) held.
  static constexpr int64_t kLossSlots = 1024;
  int64_t last_loss_id() const { return losses_queued_; }
  float loss_of(int64_t id) const;
  // Where forward writes the loss (backend memory, 1 float): an exchange that combines the
  // losses on the device reads it there (dist/local_loss.h LocalLoss::on_device).
  const float* device_loss() const { return loss_.f32(); }
  // Training forwards of the layers between the input and the loss run as one recorded unit
  // (GraphCapture; cuda: a CUDA graph): the first forward after each plan runs
  // plainly, the second is recorded, and every later one replays the recording. Throws
  // ConfigError when the backend cannot capture or a layer draws per-step host data (dropout).
  void use_captured_forward(bool on);
  // Starts copying the next batch's images (mb, per-sample) to the device on the backend's
  // staging queue (InputStaging; a backend without one copies at once): `images` must be
  // allocate_host memory, untouched until InputStaging::staged_copies_done. The next
  // forward_queued(nullptr, ...) uses them; `mb` may differ from batch() (a share that changes:
  // set_batch(mb) before that forward).
  void stage_input(const float* images, int64_t mb);
  // The factor backward multiplies the loss gradient by (fp16 loss scaling, a share's weight; 1
  // by default), times *device_scale when given (device memory: loss_reads: log).
  void set_loss_scale(float scale, const float* device_scale = nullptr);
  // Backward from the loss through every layer; overwrites the gradient arena.
  // `on_layer_grads(range)` is called as soon as a layer's parameter gradients are final
  // (in reverse layer order), so communication can overlap with the rest of backward.
  void backward(const std::function<void(ParamRange)>& on_layer_grads = nullptr);
  // Output (mb, node_shape) of a node after forward, as plain fp32 in host memory owned by the
  // net (valid until the next call of node_output/output). A conv / batch norm / add whose
  // ReLU was fused holds the ReLU'd values (it shares its buffer with the ReLU node).
  const float* node_output(int node) const;
  // The output of the node feeding the loss: logits (mb, classes) or predictions (mb, outputs),
  // as node_output.
  const float* output() const;
  Shape output_shape() const;  // per sample
  // Loss node kind: true for cross-entropy (classification), false for MSE (regression).
  bool is_classifier() const;

  // ---- parameters (device memory, plain f32; host-accessible on the CPU backends) ----
  float* params() { return params_ext_ ? params_ext_ : params_.f32(); }
  float* grads() { return grads_ext_ ? grads_ext_ : grads_.f32(); }
  // Moves the parameter and/or gradient arena (null: keep it) into caller-owned host memory of
  // param_count() floats that outlives the net (e.g. shared memory that other processes read,
  // dist/allreduce.h allocate_shared_floats), contents copied (the weights only if
  // `copy_params`: memory several nets share gets them from one): layers read their weights
  // and write their gradients there from now on. After finalize; host-accessible backends only.
  void use_arena_storage(float* params, float* grads, bool copy_params = true);
  int64_t param_count() const { return param_count_; }
  // Non-trainable state that must stay consistent across workers (BN running mean/var).
  float* state() { return state_.f32(); }
  int64_t state_count() const { return state_count_; }
  // One row per layer (the loss included), in node order.
  std::vector<LayerInfo> layer_table() const;
  // Every layer's random stream (Layer::rng_state), concatenated in node order: what a
  // checkpoint keeps so that dropout masks continue exactly. set_rng_states takes what
  // rng_states gave (ConfigError when the length does not fit this net).
  std::vector<uint64_t> rng_states() const;
  void set_rng_states(const std::vector<uint64_t>& words);
  int64_t flops_per_sample() const;
  Backend& backend() { return backend_; }
  // Per-layer timing (`trainscale calibrate`): when on, forward and backward synchronise the
  // backend around every layer and add its seconds to layer_seconds(node) = {forward,
  // backward}; a fused ReLU's forward is its input's. Off by default: runs never pay for it.
  void set_layer_timing(bool on) { layer_timing_ = on; }
  std::pair<double, double> layer_seconds(int node) const;
  void reset_layer_seconds();

 private:
  struct Node;
  Node& node(int id) const { return *nodes_[static_cast<size_t>(id)]; }
  void bind_layers();        // points every layer at its slices of params(), grads(), state()
  void plan(int64_t mb);     // set_batch's work: plans, buffers, argument tensors
  void plan_gradient_memory();
  void plan_backward_scratch();
  void decide_fusion();
  void backward_node(size_t n, const std::function<void(ParamRange)>& on_layer_grads);
  Tensor dst_tensor(int node) const;   // a node's output (a fused ReLU's is its input's)
  Tensor diff_tensor(int node) const;  // its gradient (no data where none is needed)

  Backend& backend_;
  InputStaging* const staging_;  // the backend's capabilities, null where it has none
  QueueMarks* const marks_;
  GraphCapture* const capture_;
  std::vector<std::unique_ptr<Node>> nodes_;
  DeviceBuffer params_, grads_, state_;
  int64_t param_count_ = 0, state_count_ = 0;
  float* params_ext_ = nullptr;  // use_arena_storage's memory, replacing params_
  float* grads_ext_ = nullptr;   // use_arena_storage's memory, replacing grads_
  std::vector<DeviceBuffer> diff_pool_;  // gradient buffers, shared by nodes (plan_gradient_memory)
  std::vector<DeviceBuffer> scratch_;    // diff targets for inputs whose diff is already written
  DeviceBuffer loss_;                  // the loss node's scalar (1 float)
  DeviceBuffer loss_on_host_;          // its copies in host memory (allocate_host: kLossSlots floats)
  std::vector<int64_t> loss_marks_;    // [kLossSlots] the mark after each slot's copy (0: none)
  int64_t losses_queued_ = 0;          // loss `id` lands in slot id % kLossSlots
  // stage_input's copies of the next images (their batch's input bytes), used in turn: a copy into one
  // runs while the device may still read the other; forward_queued's release_staged makes the
  // copy into one wait on the device for the forward that read it last.
  std::array<DeviceBuffer, 2> staged_input_;
  int staged_turn_ = 0;  // the buffer the latest stage_input wrote
  bool input_staged_ = false;
  bool capture_forward_ = false;
  int forward_capture_ = -1;     // the recording of this plan's training forward, -1: none yet
  bool forward_warm_ = false;    // a plain training forward ran since the plan
  void run_layers(Mode mode);
  void run_layers_captured();
  mutable DeviceBuffer plain_temp_;    // node_output's conversion to plain f32, when needed
  mutable std::vector<float> host_output_;
  int64_t batch_ = 0;
  bool finalized_ = false;
  bool fusion_ = true;
  bool last_forward_train_ = false;
  bool layer_timing_ = false;
};

}  // namespace ts
