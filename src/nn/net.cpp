// The DAG network (see net.h): nodes in insertion order, one activation and one diff buffer per
// node, diffs of multi-consumer nodes summed, parameters/gradients/state in flat arenas.
// Activation and diff buffers are registered with the backend, which may keep them in its own
// layout between ops; the net converts at its edges (images in, output()/node_output() out).
#include "nn/net.h"

#include <algorithm>
#include <cstring>

#include "core/error.h"

namespace ts {

struct Net::Node {
  std::unique_ptr<Layer> layer;  // null for the input node
  std::vector<int> inputs;
  Shape shape;                   // per-sample output shape
  Buffer<float> dst;             // (mb, shape); unused for the loss node
  Buffer<float> diff;            // (mb, shape) where needs_grad
  ParamRange params;
  int64_t state_offset = 0;
  int consumers = 0;             // input slots of later nodes that read this node
  int alias = -1;                // a fused ReLU: the node whose dst it shares (its forward is skipped)
  bool needs_grad = false;       // has parameters or depends on a node with parameters
  bool diff_written = false;     // during backward: some consumer already wrote diff
  std::vector<const float*> srcs;  // argument vectors, filled once per set_batch
  std::vector<float*> diff_srcs;
};

Net::Net(Backend& backend) : backend_(backend) {}
Net::~Net() { release_buffers(); }

void Net::release_buffers() {
  for (auto& node : nodes_) {
    if (node->dst.data()) backend_.unregister_buffer(node->dst.data());
    if (node->diff.data()) backend_.unregister_buffer(node->diff.data());
  }
  for (auto& b : scratch_)
    if (b.data()) backend_.unregister_buffer(b.data());
}

float* Net::node_dst(int node) {
  Node& n = *nodes_[static_cast<size_t>(node)];
  return n.alias >= 0 ? nodes_[static_cast<size_t>(n.alias)]->dst.data() : n.dst.data();
}

void Net::set_fusion(bool enabled) {
  if (finalized_) throw ConfigError("Net::set_fusion after Net::finalize");
  fusion_ = enabled;
}

bool Net::fused(int node) const { return nodes_.at(static_cast<size_t>(node))->alias >= 0; }

int Net::input(Shape per_sample) {
  if (!nodes_.empty()) throw ConfigError("Net::input must be the first node and appear once");
  if (per_sample.rank() < 1 || per_sample.numel() < 1)
    throw ConfigError("Net::input: bad per-sample shape " + per_sample.str());
  auto node = std::make_unique<Node>();
  node->shape = std::move(per_sample);
  nodes_.push_back(std::move(node));
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
    shapes.push_back(nodes_[static_cast<size_t>(in)]->shape);
  }
  if (layer->is_loss() && inputs.size() != 1)
    throw ConfigError("loss layer " + layer->name() + " reads exactly one node");
  auto node = std::make_unique<Node>();
  node->shape = layer->setup(shapes);
  node->layer = std::move(layer);
  node->inputs = std::move(inputs);
  for (int in : node->inputs) nodes_[static_cast<size_t>(in)]->consumers++;
  nodes_.push_back(std::move(node));
  return id;
}

Shape Net::node_shape(int node) const { return nodes_.at(static_cast<size_t>(node))->shape; }

Layer* Net::layer(int node) { return nodes_.at(static_cast<size_t>(node))->layer.get(); }

const float* Net::node_output(int node) const {
  // Converting to plain changes the buffer's layout, not the tensor it holds.
  float* dst = const_cast<Net&>(*this).node_dst(node);
  if (dst && batch_ > 0)
    backend_.make_plain(dst, batch_ * nodes_.at(static_cast<size_t>(node))->shape.numel());
  return dst;
}

ParamRange Net::param_range(int node) const {
  return nodes_.at(static_cast<size_t>(node))->params;
}

void Net::finalize(uint64_t seed) {
  if (finalized_) throw ConfigError("Net::finalize called twice");
  if (nodes_.size() < 2 || !nodes_.back()->layer->is_loss())
    throw ConfigError("Net::finalize: the last node must be a loss layer "
                      "(softmax cross-entropy or mean-squared error)");
  int64_t param_total = 0, state_total = 0;
  for (size_t n = 1; n < nodes_.size(); ++n) {
    Node& node = *nodes_[n];
    node.params = ParamRange{param_total, node.layer->param_count()};
    node.state_offset = state_total;
    param_total += node.params.count;
    state_total += node.layer->state_count();
    node.needs_grad = node.params.count > 0;
    for (int in : node.inputs) node.needs_grad |= nodes_[static_cast<size_t>(in)]->needs_grad;
  }
  param_count_ = param_total;
  params_.resize(static_cast<size_t>(param_total));
  grads_.resize(static_cast<size_t>(param_total));
  state_.resize(static_cast<size_t>(state_total));
  bind_layers();
  for (size_t n = 1; n < nodes_.size(); ++n) {
    // One stream per node: a model's initial weights do not depend on other layers' sizes.
    Rng rng(seed_mix(seed, n, 0x1A7E5));
    nodes_[n]->layer->init(rng);
  }
  // Fusion: a ReLU whose input node (conv, batch norm, a two-input add) has it as its only
  // reader is computed by that node's forward (oneDNN post-op / fuse_norm_relu); the ReLU node
  // shares its input's buffer and keeps only its backward, which reads relu(x) = that buffer.
  // Those layers' backward never reads their own dst, so nothing else changes.
  for (size_t n = 1; fusion_ && n + 1 < nodes_.size(); ++n) {
    Node& node = *nodes_[n];
    if (node.layer->kind() != "relu" || node.inputs.size() != 1) continue;
    const int in = node.inputs[0];
    Node& src = *nodes_[static_cast<size_t>(in)];
    if (in == 0 || src.consumers != 1 || src.alias >= 0) continue;
    if (src.layer->fuse_relu()) node.alias = in;
  }
  finalized_ = true;
}

void Net::use_arena_storage(float* params, float* grads, bool copy_params) {
  if (!finalized_) throw ConfigError("Net::use_arena_storage before Net::finalize");
  const size_t bytes = static_cast<size_t>(param_count()) * sizeof(float);
  if (params && copy_params && bytes > 0) std::memcpy(params, this->params(), bytes);
  if (grads && bytes > 0) std::memcpy(grads, this->grads(), bytes);
  if (params) {
    params_ext_ = params;
    params_.resize(0);
  }
  if (grads) {
    grads_ext_ = grads;
    grads_.resize(0);
  }
  bind_layers();
}

void Net::bind_layers() {
  for (size_t n = 1; n < nodes_.size(); ++n) {
    Node& node = *nodes_[n];
    Layer& layer = *node.layer;
    layer.bind(node.params.count ? params() + node.params.offset : nullptr,
               node.params.count ? grads() + node.params.offset : nullptr,
               layer.state_count() ? state() + node.state_offset : nullptr);
  }
}

void Net::set_batch(int64_t mb) {
  if (!finalized_) throw ConfigError("Net::set_batch before Net::finalize");
  if (mb < 1) throw ConfigError("minibatch must be >= 1, got " + std::to_string(mb));
  if (mb == batch_) return;
  batch_ = mb;
  release_buffers();
  // Buffers are sized for the backend's layouts (activation_bytes >= mb * numel floats) and
  // registered; the input holds the plain images (registered only so that the backend can reuse
  // its conversion of them, e.g. to bf16, within a step).
  size_t scratch_count = 0, scratch_floats = 0;
  auto floats = [&](const Shape& s) { return (backend_.activation_bytes(mb, s) + 3) / sizeof(float); };
  for (size_t n = 0; n < nodes_.size(); ++n) {
    Node& node = *nodes_[n];
    const bool is_loss = node.layer && node.layer->is_loss();
    const size_t size = floats(node.shape);
    node.dst.resize(is_loss || node.alias >= 0 ? 0 : (n == 0 ? static_cast<size_t>(mb * node.shape.numel()) : size));
    node.diff.resize(node.needs_grad && !is_loss ? size : 0);
    if (node.dst.data()) backend_.register_buffer(node.dst.data(), node.dst.size() * sizeof(float));
    if (node.diff.data()) backend_.register_buffer(node.diff.data(), node.diff.size() * sizeof(float));
    if (node.needs_grad && node.consumers > 1) scratch_floats = std::max(scratch_floats, size);
    if (node.layer) node.layer->set_batch(mb);
    scratch_count = std::max(scratch_count, node.inputs.size());
  }
  scratch_.clear();
  if (scratch_floats > 0)
    for (size_t i = 0; i < scratch_count; ++i) {
      scratch_.emplace_back(scratch_floats);
      backend_.register_buffer(scratch_.back().data(), scratch_floats * sizeof(float));
    }
  for (size_t n = 1; n < nodes_.size(); ++n) {
    Node& node = *nodes_[n];
    node.srcs.clear();
    for (int in : node.inputs) node.srcs.push_back(node_dst(in));
    node.diff_srcs.assign(node.inputs.size(), nullptr);
  }
}

float Net::forward(const float* images, const int32_t* labels, const float* targets, Mode mode) {
  if (batch_ < 1) throw ConfigError("Net::forward before Net::set_batch");
  Node& input = *nodes_[0];
  std::memcpy(input.dst.data(), images, input.dst.size() * sizeof(float));
  backend_.mark_plain(input.dst.data());
  const size_t last = nodes_.size() - 1;
  for (size_t n = 1; n < last; ++n) {
    Node& node = *nodes_[n];
    if (node.alias >= 0) continue;  // a fused ReLU: its input's forward computed it
    node.layer->forward(backend_, node.srcs, node.dst.data(), mode);
  }
  last_forward_train_ = mode == Mode::train;
  Node& loss_node = *nodes_[last];
  if (!labels && !targets) return 0.0f;  // prediction only: no loss
  auto* loss = static_cast<LossLayer*>(loss_node.layer.get());
  return loss->forward_loss(backend_, loss_node.srcs[0], labels, targets);
}

void Net::backward(const std::function<void(ParamRange)>& on_layer_grads) {
  if (batch_ < 1) throw ConfigError("Net::backward before Net::set_batch");
  if (!last_forward_train_)
    throw RuntimeError("Net::backward needs a preceding forward in Mode::train");
  for (auto& node : nodes_) node->diff_written = false;
  const size_t last = nodes_.size() - 1;
  {
    Node& loss_node = *nodes_[last];
    Node& pred = *nodes_[static_cast<size_t>(loss_node.inputs[0])];
    if (!pred.needs_grad) return;
    static_cast<LossLayer*>(loss_node.layer.get())
        ->backward_loss(backend_, node_dst(loss_node.inputs[0]), pred.diff.data());
    pred.diff_written = true;
  }
  std::vector<size_t> accumulate;
  for (size_t n = last - 1; n >= 1; --n) {
    Node& node = *nodes_[n];
    if (!node.needs_grad) continue;
    if (!node.diff_written) {  // a branch that does not reach the loss
      node.diff.zero();
      backend_.mark_plain(node.diff.data());
    }
    // The first consumer (in backward order) of a node writes its diff directly; later ones
    // write into scratch, which is then added: a multi-consumer node gets the sum of diffs.
    accumulate.clear();
    for (size_t i = 0; i < node.inputs.size(); ++i) {
      Node& in = *nodes_[static_cast<size_t>(node.inputs[i])];
      float* target = nullptr;
      if (in.needs_grad) {
        bool claimed = in.diff_written;
        for (size_t k = 0; k < i; ++k) claimed |= node.inputs[k] == node.inputs[i];
        if (claimed) {
          target = scratch_[i].data();
          accumulate.push_back(i);
        } else {
          target = in.diff.data();
        }
      }
      node.diff_srcs[i] = target;
    }
    node.layer->backward(backend_, node.srcs, node_dst(static_cast<int>(n)), node.diff.data(),
                         node.diff_srcs);
    for (size_t i : accumulate) {
      Node& in = *nodes_[static_cast<size_t>(node.inputs[i])];
      backend_.add(batch_ * in.shape.numel(), in.diff.data(), scratch_[i].data(), in.diff.data());
    }
    for (int in : node.inputs) {
      Node& src = *nodes_[static_cast<size_t>(in)];
      if (src.needs_grad) src.diff_written = true;
    }
    if (node.params.count > 0 && on_layer_grads) on_layer_grads(node.params);
  }
}

const float* Net::output() const { return node_output(nodes_.back()->inputs[0]); }

Shape Net::output_shape() const {
  const Node& loss_node = *nodes_.back();
  return nodes_[static_cast<size_t>(loss_node.inputs[0])]->shape;
}

bool Net::is_classifier() const {
  return static_cast<const LossLayer*>(nodes_.back()->layer.get())->is_classifier();
}

std::vector<LayerInfo> Net::layer_table() const {
  std::vector<LayerInfo> rows;
  for (size_t n = 1; n < nodes_.size(); ++n) rows.push_back(nodes_[n]->layer->info());
  return rows;
}

int64_t Net::flops_per_sample() const {
  int64_t total = 0;
  for (size_t n = 1; n < nodes_.size(); ++n) total += nodes_[n]->layer->info().flops;
  return total;
}

}  // namespace ts
