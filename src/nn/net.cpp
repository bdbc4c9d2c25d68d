// The DAG network (see net.h): nodes in insertion order, one output and one gradient buffer per
// node in the desc its layer planned, gradients of multi-consumer nodes summed, parameters,
// gradients and state in flat device arenas.
#include "nn/net.h"

#include <algorithm>
#include <cstring>

#include "core/error.h"
#include "core/timer.h"

namespace ts {

struct Net::Node {
  std::unique_ptr<Layer> layer;  // null for the input node
  std::vector<int> inputs;
  Shape shape;                   // per-sample output shape
  TensorDesc desc;               // planned desc of the output and of its gradient
  DeviceBuffer dst;              // output; unused for the loss node and fused ReLUs
  int diff_slot = -1;            // its gradient's buffer in diff_pool_, where needs_grad
  std::unique_ptr<AddOp> accumulate;  // diff += scratch, for a node several layers read
  ParamRange params;
  int64_t state_offset = 0;
  int consumers = 0;             // input slots of later nodes that read this node
  int alias = -1;                // a fused ReLU: the node whose dst it shares (its forward is skipped)
  bool needs_grad = false;       // has parameters or depends on a node with parameters
  bool diff_written = false;     // during backward: some consumer already wrote diff
  // Argument tensors, set once per plan: inputs, output, gradient, the inputs' gradients, and
  // where this node's backward writes them this step (a gradient or a scratch slot).
  std::vector<Tensor> srcs;
  Tensor dst_t, diff_t;
  std::vector<Tensor> diff_srcs, diff_targets;
  std::vector<size_t> accumulate_slots;  // backward: inputs whose gradient went to scratch
  double forward_s = 0, backward_s = 0;  // set_layer_timing's sums
};

Net::Net(Backend& backend)
    : backend_(backend),
      staging_(capability<InputStaging>(backend)),
      marks_(capability<QueueMarks>(backend)),
      capture_(capability<GraphCapture>(backend)) {}
Net::~Net() = default;

Tensor Net::dst_tensor(int id) const {
  const Node& n = node(id);
  const Node& owner = n.alias >= 0 ? node(n.alias) : n;
  return Tensor(owner.dst.data(), n.desc);
}

Tensor Net::diff_tensor(int id) const {
  const Node& n = node(id);
  return Tensor(n.diff_slot >= 0 ? diff_pool_[static_cast<size_t>(n.diff_slot)].data() : nullptr, n.desc);
}

void Net::set_fusion(bool enabled) {
  if (finalized_) throw ConfigError("Net::set_fusion after Net::finalize");
  fusion_ = enabled;
}

const std::vector<int>& Net::node_inputs(int id) const { return nodes_.at(static_cast<size_t>(id))->inputs; }

bool Net::fused(int id) const { return nodes_.at(static_cast<size_t>(id))->alias >= 0; }

int Net::input(Shape per_sample) {
  if (!nodes_.empty()) throw ConfigError("Net::input must be the first node and appear once");
  if (per_sample.rank() < 1 || per_sample.numel() < 1)
    throw ConfigError("Net::input: bad per-sample shape " + per_sample.str());
  auto n = std::make_unique<Node>();
  n->shape = std::move(per_sample);
  nodes_.push_back(std::move(n));
  return 0;
}

int Net::add(std::unique_ptr<Layer> layer, std::vector<int> inputs) {
  if (nodes_.empty()) throw ConfigError("Net::add before Net::input");
  if (finalized_) throw ConfigError("Net::add after Net::finalize");
  if (nodes_.back()->layer && nodes_.back()->layer->is_loss())
    throw ConfigError("Net::add after the loss layer (the loss must be the last node)");
  if (!layer) throw ConfigError("Net::add: null layer");
  const int id = static_cast<int>(nodes_.size());
  if (layer->name().empty()) layer->set_name(layer->kind() + std::to_string(id));
  if (inputs.empty()) throw ConfigError("layer " + layer->name() + " has no inputs");
  std::vector<Shape> shapes;
  for (int in : inputs) {
    if (in < 0 || in >= id)
      throw ConfigError("layer " + layer->name() + " reads node " + std::to_string(in) +
                        ", which does not exist yet (nodes are added in topological order)");
    shapes.push_back(node(in).shape);
  }
  if (layer->is_loss() && inputs.size() != 1)
    throw ConfigError("loss layer " + layer->name() + " reads exactly one node");
  auto n = std::make_unique<Node>();
  n->shape = layer->setup(shapes);
  n->layer = std::move(layer);
  n->inputs = std::move(inputs);
  for (int in : n->inputs) node(in).consumers++;
  nodes_.push_back(std::move(n));
  return id;
}

Shape Net::node_shape(int id) const { return nodes_.at(static_cast<size_t>(id))->shape; }

Layer* Net::layer(int id) { return nodes_.at(static_cast<size_t>(id))->layer.get(); }

ParamRange Net::param_range(int id) const { return nodes_.at(static_cast<size_t>(id))->params; }

void Net::finalize(uint64_t seed) {
  if (finalized_) throw ConfigError("Net::finalize called twice");
  if (nodes_.size() < 2 || !nodes_.back()->layer->is_loss())
    throw ConfigError("Net::finalize: the last node must be a loss layer "
                      "(softmax cross-entropy or mean-squared error)");
  int64_t param_total = 0, state_total = 0;
  for (size_t i = 1; i < nodes_.size(); ++i) {
    Node& n = *nodes_[i];
    n.params = ParamRange{param_total, n.layer->param_count()};
    n.state_offset = state_total;
    param_total += n.params.count;
    state_total += n.layer->state_count();
    n.needs_grad = n.params.count > 0;
    for (int in : n.inputs) n.needs_grad |= node(in).needs_grad;
  }
  param_count_ = param_total;
  state_count_ = state_total;
  // Initial values are drawn on the host, one stream per node (a model's initial weights do not
  // depend on other layers' sizes), then copied to the device arenas.
  std::vector<float> params(static_cast<size_t>(param_total)), state(static_cast<size_t>(state_total));
  for (size_t i = 1; i < nodes_.size(); ++i) {
    Node& n = *nodes_[i];
    Rng rng(seed_mix(seed, i, 0x1A7E5));
    n.layer->init(rng, params.data() + n.params.offset, state.data() + n.state_offset);
  }
  const size_t param_bytes = params.size() * sizeof(float), state_bytes = state.size() * sizeof(float);
  params_ = backend_.allocate(param_bytes);
  grads_ = backend_.allocate(param_bytes);
  state_ = backend_.allocate(state_bytes);
  backend_.copy_from_host(params_.data(), params.data(), param_bytes);
  backend_.copy_from_host(state_.data(), state.data(), state_bytes);
  loss_ = backend_.allocate(sizeof(float));
  loss_on_host_ = backend_.allocate_host(kLossSlots * sizeof(float));
  loss_marks_.assign(kLossSlots, 0);
  bind_layers();
  decide_fusion();
  finalized_ = true;
}

// A ReLU whose input node (conv, batch norm, a two-input add) has it as its only reader is
// computed by that node's forward (oneDNN post-op / fuse_norm_relu); the ReLU node shares its
// input's buffer and keeps only its backward, which reads relu(x) = that buffer. Those layers'
// backward never reads their own dst, so nothing else changes.
void Net::decide_fusion() {
  for (size_t i = 1; fusion_ && i + 1 < nodes_.size(); ++i) {
    Node& n = *nodes_[i];
    if (n.layer->kind() != "relu" || n.inputs.size() != 1) continue;
    const int in = n.inputs[0];
    Node& src = node(in);
    if (in == 0 || src.consumers != 1 || src.alias >= 0) continue;
    if (src.layer->fuse_relu()) n.alias = in;
  }
}

void Net::use_arena_storage(float* params, float* grads, bool copy_params) {
  if (!finalized_) throw ConfigError("Net::use_arena_storage before Net::finalize");
  if (!backend_.describe().host_accessible)
    throw ConfigError("Net::use_arena_storage: backend " + backend_.name() +
                      " computes in memory the host cannot address; its arenas cannot move to host memory");
  const size_t bytes = static_cast<size_t>(param_count()) * sizeof(float);
  if (params && copy_params && bytes > 0) std::memcpy(params, this->params(), bytes);
  if (grads && bytes > 0) std::memcpy(grads, this->grads(), bytes);
  if (params) {
    params_ext_ = params;
    params_.reset();
  }
  if (grads) {
    grads_ext_ = grads;
    grads_.reset();
  }
  bind_layers();
}

void Net::bind_layers() {
  for (size_t i = 1; i < nodes_.size(); ++i) {
    Node& n = *nodes_[i];
    n.layer->bind(n.params.count ? params() + n.params.offset : nullptr,
                  n.params.count ? grads() + n.params.offset : nullptr,
                  n.layer->state_count() ? state() + n.state_offset : nullptr);
  }
}

void Net::set_batch(int64_t mb) {
  if (!finalized_) throw ConfigError("Net::set_batch before Net::finalize");
  if (mb < 1) throw ConfigError("minibatch must be >= 1, got " + std::to_string(mb));
  if (mb == batch_) return;
  plan(mb);
  batch_ = mb;
}

void Net::plan(int64_t mb) {
  batch_ = 0;  // a plan that fails half-way leaves no usable batch
  if (capture_) capture_->release_capture(forward_capture_);  // recorded with the old buffers
  forward_capture_ = -1;
  forward_warm_ = false;
  for (auto& n : nodes_) n->dst = DeviceBuffer(), n->diff_slot = -1;
  diff_pool_.clear();
  scratch_.clear();
  Node& input = node(0);
  Shape input_dims{mb};
  for (int64_t d : input.shape.dims) input_dims.dims.push_back(d);
  input.desc = TensorDesc::plain(input_dims);
  input.dst = backend_.allocate(input.desc.bytes);
  // Forward order: each layer plans on its inputs' descs; outputs and gradients take its desc.
  for (size_t i = 1; i < nodes_.size(); ++i) {
    Node& n = *nodes_[i];
    std::vector<TensorDesc> src_descs;
    for (int in : n.inputs) src_descs.push_back(node(in).desc);
    n.desc = n.layer->plan(backend_, mb, src_descs);
    const bool is_loss = n.layer->is_loss();
    if (n.alias >= 0 && n.desc != node(n.alias).desc)
      throw RuntimeError("layer " + n.layer->name() + ": its fused ReLU was planned as " + n.desc.str() +
                         " but shares a buffer planned as " + node(n.alias).desc.str());
    if (!is_loss && n.alias < 0) n.dst = backend_.allocate(n.desc.bytes);
  }
  plan_gradient_memory();
  for (size_t i = 1; i < nodes_.size(); ++i) {
    Node& n = *nodes_[i];
    n.srcs.clear();
    n.diff_srcs.clear();
    n.dst_t = dst_tensor(static_cast<int>(i));
    n.diff_t = diff_tensor(static_cast<int>(i));
    for (int in : n.inputs) {
      n.srcs.push_back(dst_tensor(in));
      n.diff_srcs.push_back(diff_tensor(in));
    }
    n.diff_targets = n.diff_srcs;
    n.accumulate_slots.reserve(n.inputs.size());
  }
  plan_backward_scratch();
}

// Gradients share buffers: node n's gradient is written by its consumers' backward (the one
// with the highest index runs first) and read by n's own backward, so it lives over the node
// indices [n, last consumer]; gradients whose intervals do not overlap take the same buffer
// (the largest buffer free at that point, grown to its largest occupant). A chain needs about two buffers instead of one
// per node, which halves training memory (activations stay: backward reads them).
void Net::plan_gradient_memory() {
  struct Slot {
    int free_below = 0;  // its latest occupant's interval starts here (free for intervals ending below)
    size_t bytes = 0;
  };
  std::vector<Slot> slots;
  std::vector<int> last_reader(nodes_.size(), -1);
  for (size_t i = 1; i < nodes_.size(); ++i)
    for (int in : nodes_[i]->inputs) last_reader[static_cast<size_t>(in)] = static_cast<int>(i);
  // Backward order: intervals ending latest (born first) are placed first.
  for (int id = static_cast<int>(nodes_.size()) - 2; id >= 1; --id) {
    Node& n = node(id);
    if (!n.needs_grad || n.layer->is_loss()) continue;
    const int end = last_reader[static_cast<size_t>(id)];
    int best = -1;
    for (size_t s = 0; s < slots.size(); ++s)
      if (slots[s].free_below > end && (best < 0 || slots[s].bytes > slots[static_cast<size_t>(best)].bytes)) best = static_cast<int>(s);
    if (best < 0) {
      slots.push_back({});
      best = static_cast<int>(slots.size()) - 1;
    }
    slots[static_cast<size_t>(best)].free_below = id;
    slots[static_cast<size_t>(best)].bytes = std::max(slots[static_cast<size_t>(best)].bytes, n.desc.bytes);
    n.diff_slot = best;
  }
  for (const Slot& s : slots) diff_pool_.push_back(backend_.allocate(s.bytes));
}

// A node several layers read gets the sum of their gradients: the first consumer (in backward
// order) writes its diff directly, later ones write into scratch (one per input slot, in the
// node's desc), which accumulate adds in.
void Net::plan_backward_scratch() {
  size_t slots = 0, bytes = 0;
  for (size_t i = 1; i < nodes_.size(); ++i) {
    Node& n = *nodes_[i];
    n.accumulate.reset();
    slots = std::max(slots, n.inputs.size());
    if (!n.needs_grad || n.consumers < 2 || n.layer->is_loss()) continue;
    n.accumulate = backend_.plan_add(n.desc, n.desc, false);
    bytes = std::max(bytes, n.desc.bytes);
  }
  if (bytes > 0)
    for (size_t s = 0; s < slots; ++s) scratch_.push_back(backend_.allocate(bytes));
}

float Net::forward(const float* images, const int32_t* labels, const float* targets, Mode mode) {
  forward_queued(images, labels, targets, mode);
  return labels || targets ? loss() : 0.0f;
}

void Net::stage_input(const float* images, int64_t mb) {
  if (!finalized_) throw ConfigError("Net::stage_input before Net::finalize");
  if (mb < 1) throw ConfigError("Net::stage_input: minibatch must be >= 1, got " + std::to_string(mb));
  const size_t bytes = static_cast<size_t>(mb * node(0).shape.numel()) * sizeof(float);
  staged_turn_ ^= 1;
  DeviceBuffer& target = staged_input_[static_cast<size_t>(staged_turn_)];
  if (target.bytes() != bytes) target = backend_.allocate(bytes);
  if (staging_)
    staging_->stage_from_host(target.data(), images, bytes);
  else
    backend_.copy_from_host(target.data(), images, bytes);
  input_staged_ = true;
}

void Net::forward_queued(const float* images, const int32_t* labels, const float* targets, Mode mode) {
  if (batch_ < 1) throw ConfigError("Net::forward before Net::set_batch");
  Node& input = node(0);
  if (images) {
    backend_.copy_from_host(input.dst.data(), images, input.desc.bytes);
  } else {
    const DeviceBuffer& staged = staged_input_[static_cast<size_t>(staged_turn_)];
    TS_CHECK(input_staged_ && staged.bytes() == input.desc.bytes,
             "Net::forward_queued without images needs a stage_input for this batch size before");
    if (staging_) staging_->wait_for_staged();
    backend_.copy(input.dst.data(), staged.data(), input.desc.bytes);
    if (staging_) staging_->release_staged();  // the next copy into that buffer waits for this one on the device
    input_staged_ = false;
  }
  if (capture_forward_ && mode == Mode::train)
    run_layers_captured();
  else
    run_layers(mode);
  last_forward_train_ = mode == Mode::train;
  const size_t last = nodes_.size() - 1;
  if (!labels && !targets) return;  // prediction only: no loss
  Node& loss_node = node(static_cast<int>(last));
  auto* loss = static_cast<LossLayer*>(loss_node.layer.get());
  loss->forward_loss(backend_, loss_node.srcs[0], labels, targets, loss_.f32());
  const int64_t id = losses_queued_ + 1;
  const size_t slot = static_cast<size_t>(id % kLossSlots);
  if (marks_)
    marks_->queue_copy_to_host(loss_on_host_.f32() + slot, loss_.data(), sizeof(float));
  else
    backend_.copy_to_host(loss_on_host_.f32() + slot, loss_.data(), sizeof(float));
  loss_marks_[slot] = marks_ ? marks_->mark() : 0;
  losses_queued_ = id;
}

void Net::run_layers(Mode mode) {
  const size_t last = nodes_.size() - 1;
  for (size_t i = 1; i < last; ++i) {
    Node& n = *nodes_[i];
    if (n.alias >= 0) continue;  // a fused ReLU: its input's forward computed it
    const double start = layer_timing_ ? now_seconds() : 0.0;
    n.layer->forward(backend_, n.srcs, n.dst_t, mode);
    if (layer_timing_) {
      backend_.synchronize();
      n.forward_s += now_seconds() - start;
    }
  }
}

std::pair<double, double> Net::layer_seconds(int id) const {
  const Node& n = *nodes_.at(static_cast<size_t>(id));
  return {n.forward_s, n.backward_s};
}

void Net::reset_layer_seconds() {
  for (auto& n : nodes_) n->forward_s = n->backward_s = 0;
}

// Layers and their libraries may allocate or choose at their first forward after a plan: that
// one runs plainly, the next is recorded (which does not run it), then replayed.
void Net::run_layers_captured() {
  if (forward_capture_ < 0) {
    if (!forward_warm_) {
      run_layers(Mode::train);
      forward_warm_ = true;
      return;
    }
    capture_->begin_capture();
    try {
      run_layers(Mode::train);
    } catch (...) {
      try { capture_->end_capture(); } catch (...) {}  // leave the queue out of capture mode
      throw;
    }
    forward_capture_ = capture_->end_capture();
  }
  capture_->replay(forward_capture_);
}

void Net::use_captured_forward(bool on) {
  if (on && !capture_)
    throw ConfigError("backend '" + backend_.name() + "' cannot record and replay work; cuda.graphs needs backend: cuda");
  for (const auto& n : nodes_)
    if (on && n->layer && n->layer->kind() == "dropout")
      throw ConfigError("cuda.graphs: layer " + n->layer->name() +
                        " (dropout) draws a new mask on the host every step, which a recorded forward cannot; "
                        "set dropout: 0 or cuda.graphs: false");
  capture_forward_ = on;
}

float Net::loss_of(int64_t id) const {
  TS_CHECK(id > 0 && id <= losses_queued_ && id > losses_queued_ - kLossSlots,
           "Net::loss_of(" + std::to_string(id) + "): the host slots hold losses " +
               std::to_string(std::max<int64_t>(1, losses_queued_ - kLossSlots + 1)) + " to " +
               std::to_string(losses_queued_));
  const size_t slot = static_cast<size_t>(id % kLossSlots);
  if (marks_) marks_->wait_for_mark(loss_marks_[slot]);
  return loss_on_host_.f32()[slot];
}

void Net::set_loss_scale(float scale, const float* device_scale) {
  static_cast<LossLayer*>(nodes_.back()->layer.get())->set_loss_scale({scale, device_scale});
}

void Net::backward(const std::function<void(ParamRange)>& on_layer_grads) {
  if (batch_ < 1) throw ConfigError("Net::backward before Net::set_batch");
  if (!last_forward_train_) throw RuntimeError("Net::backward needs a preceding forward in Mode::train");
  for (auto& n : nodes_) n->diff_written = false;
  const size_t last = nodes_.size() - 1;
  Node& loss_node = *nodes_[last];
  const int pred = loss_node.inputs[0];
  if (!node(pred).needs_grad) return;
  static_cast<LossLayer*>(loss_node.layer.get())->backward_loss(backend_, loss_node.srcs[0], node(pred).diff_t);
  node(pred).diff_written = true;
  for (size_t i = last - 1; i >= 1; --i) backward_node(i, on_layer_grads);
}

void Net::backward_node(size_t i, const std::function<void(ParamRange)>& on_layer_grads) {
  Node& n = *nodes_[i];
  if (!n.needs_grad) return;
  if (!n.diff_written) backend_.fill_zero(n.diff_t.data, n.desc.bytes);  // a branch that does not reach the loss
  // Inputs whose gradient an earlier consumer (or an earlier slot of this node) already wrote
  // get this layer's gradient in scratch, added after the layer's backward.
  n.accumulate_slots.clear();
  const double start = layer_timing_ ? now_seconds() : 0.0;
  for (size_t k = 0; k < n.inputs.size(); ++k) {
    Node& in = node(n.inputs[k]);
    n.diff_targets[k].data = n.diff_srcs[k].data;
    if (!in.needs_grad) continue;
    bool claimed = in.diff_written;
    for (size_t j = 0; j < k; ++j) claimed |= n.inputs[j] == n.inputs[k];
    if (claimed) {
      n.diff_targets[k].data = scratch_[k].data();
      n.accumulate_slots.push_back(k);
    }
  }
  n.layer->backward(backend_, n.srcs, n.dst_t, n.diff_t, n.diff_targets);
  for (size_t k : n.accumulate_slots) {
    const Tensor& sum = n.diff_srcs[k];
    node(n.inputs[k]).accumulate->forward(sum, n.diff_targets[k], sum);
  }
  for (int in : n.inputs)
    if (node(in).needs_grad) node(in).diff_written = true;
  if (layer_timing_) {
    backend_.synchronize();
    n.backward_s += now_seconds() - start;
  }
  if (n.params.count > 0 && on_layer_grads) on_layer_grads(n.params);
}

const float* Net::node_output(int id) const {
  if (batch_ < 1) throw ConfigError("Net::node_output before Net::set_batch");
  const Tensor t = dst_tensor(id);
  TS_CHECK(t.data, "Net::node_output: node " + std::to_string(id) + " keeps no output (the loss node)");
  const TensorDesc plain = TensorDesc::plain(t.desc.dims);
  const void* source = t.data;
  if (t.desc != plain) {  // another layout or data type: convert on the device first
    if (plain_temp_.bytes() < plain.bytes) plain_temp_ = backend_.allocate(plain.bytes);
    backend_.reorder(t, Tensor(plain_temp_.data(), plain));
    source = plain_temp_.data();
  }
  host_output_.resize(static_cast<size_t>(plain.numel()));
  backend_.copy_to_host(host_output_.data(), source, plain.bytes);
  return host_output_.data();
}

const float* Net::output() const { return node_output(nodes_.back()->inputs[0]); }

Shape Net::output_shape() const { return node(nodes_.back()->inputs[0]).shape; }

bool Net::is_classifier() const {
  return static_cast<const LossLayer*>(nodes_.back()->layer.get())->is_classifier();
}

std::vector<LayerInfo> Net::layer_table() const {
  std::vector<LayerInfo> rows;
  for (size_t i = 1; i < nodes_.size(); ++i) rows.push_back(nodes_[i]->layer->info());
  return rows;
}

std::vector<uint64_t> Net::rng_states() const {
  std::vector<uint64_t> words;
  for (size_t i = 1; i < nodes_.size(); ++i) {
    const std::vector<uint64_t> layer_words = nodes_[i]->layer->rng_state();
    words.insert(words.end(), layer_words.begin(), layer_words.end());
  }
  return words;
}

void Net::set_rng_states(const std::vector<uint64_t>& words) {
  size_t used = 0;
  for (size_t i = 1; i < nodes_.size(); ++i) {
    Layer& layer = *nodes_[i]->layer;
    const size_t n = layer.rng_state().size();
    if (used + n > words.size()) break;
    layer.set_rng_state(std::vector<uint64_t>(words.begin() + static_cast<std::ptrdiff_t>(used),
                                              words.begin() + static_cast<std::ptrdiff_t>(used + n)));
    used += n;
  }
  if (used != words.size() || rng_states().size() != words.size())
    throw ConfigError("the net's random streams take " + std::to_string(rng_states().size()) + " words, " +
                      std::to_string(words.size()) + " were given (a checkpoint of another model?)");
}

int64_t Net::flops_per_sample() const {
  int64_t total = 0;
  for (size_t i = 1; i < nodes_.size(); ++i) total += nodes_[i]->layer->info().flops;
  return total;
}

}  // namespace ts
