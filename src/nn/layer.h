// The layer base class: a forward/backward pair over explicit per-sample shapes. A layer owns
// the buffers its backward needs (pool workspace, BN batch statistics, dropout mask, softmax
// probabilities), sized in set_batch(); its parameters, gradients and non-trainable state are
// slices of the net's flat arenas, bound with bind(). Layers call only the Backend table.
#pragma once

#include <cstdint>
#include <string>
#include <vector>

#include "backend/backend.h"
#include "core/rng.h"
#include "core/shape.h"

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

// Weight initialisation: He (normal, std sqrt(2/fan_in)) for layers followed by ReLU,
// Xavier/Glorot (uniform, limit sqrt(6/(fan_in+fan_out))) for everything else.
enum class Init { he, xavier };
void init_fill(Init init, Rng& rng, int64_t fan_in, int64_t fan_out, float* wei, int64_t count);

class Layer {
 public:
  explicit Layer(std::string name) : name_(std::move(name)) {}
  virtual ~Layer() = default;
  Layer(const Layer&) = delete;
  Layer& operator=(const Layer&) = delete;

  const std::string& name() const { return name_; }
  void set_name(std::string name) { name_ = std::move(name); }
  // Short kind for layer tables: "conv", "pool", "fc", "bn", "relu", ...
  virtual std::string kind() const = 0;

  // Checks the per-sample input shapes (no batch dimension), plans the descriptors and returns
  // the per-sample output shape. Throws ConfigError naming the layer when the inputs do not fit.
  virtual Shape setup(const std::vector<Shape>& src_shapes) = 0;
  // Trainable parameters (weights then biases) and non-trainable state (BN running stats).
  virtual int64_t param_count() const { return 0; }
  virtual int64_t state_count() const { return 0; }
  // Points the layer at its slices of the arenas: params/grads of param_count() floats, state of
  // state_count() floats (null where the count is 0).
  void bind(float* params, float* grads, float* state) {
    params_ = params;
    grads_ = grads;
    state_ = state;
  }
  // Initialises the bound parameters (and state) deterministically from `rng`.
  virtual void init(Rng& rng) {}
  // Sizes the layer-owned buffers for minibatch `mb`. Overrides call Layer::set_batch first.
  virtual void set_batch(int64_t mb) { mb_ = mb; }

  // srcs[i] (mb, src_shapes[i]...) -> dst (mb, output shape...).
  virtual void forward(Backend& backend, const std::vector<const float*>& srcs, float* dst,
                       Mode mode) = 0;
  // diff_dst (mb, output) -> diff_srcs[i] (mb, src_shapes[i]); a null diff_srcs[i] means that
  // input needs no gradient (the net input). Parameter gradients overwrite the bound grads.
  // srcs and dst are the tensors of the preceding forward (train mode).
  virtual void backward(Backend& backend, const std::vector<const float*>& srcs, const float* dst,
                        const float* diff_dst, const std::vector<float*>& diff_srcs) = 0;

  // name, kind, descriptor at mb=1, parameters, forward FLOPs per sample.
  virtual LayerInfo info() const;
  virtual bool is_loss() const { return false; }
  // Fusion (the Net calls this at finalize for a layer whose only reader is a ReLU): a layer that
  // can apply that ReLU inside its own forward (conv, batch norm, add) does so from now on and
  // returns true. Such a layer's backward must not read its own dst (it then holds relu(dst)).
  virtual bool fuse_relu() { return false; }

  const std::vector<Shape>& src_shapes() const { return src_shapes_; }
  const Shape& dst_shape() const { return dst_shape_; }

 protected:
  // Throws ConfigError "layer <name> (<kind>): <what>".
  [[noreturn]] void fail(const std::string& what) const;
  // Checks the number of inputs.
  void expect_inputs(const std::vector<Shape>& src_shapes, size_t count) const;

  std::string name_;
  int64_t mb_ = 0;
  float* params_ = nullptr;
  float* grads_ = nullptr;
  float* state_ = nullptr;
  std::vector<Shape> src_shapes_;
  Shape dst_shape_;
};

// A loss: reads one input (predictions) plus labels or targets, and produces a scalar.
// The net calls forward_loss/backward_loss instead of forward/backward.
class LossLayer : public Layer {
 public:
  using Layer::Layer;
  bool is_loss() const override { return true; }
  // True for classification losses (labels), false for regression (targets).
  virtual bool is_classifier() const = 0;
  // src (mb, outputs); labels (mb) or targets (mb, outputs). Returns the mean loss; keeps what
  // backward needs (probabilities, a copy of labels/targets).
  virtual float forward_loss(Backend& backend, const float* src, const int32_t* labels,
                             const float* targets) = 0;
  // diff_src (mb, outputs) of the mean loss.
  virtual void backward_loss(Backend& backend, const float* src, float* diff_src) = 0;

  void forward(Backend&, const std::vector<const float*>&, float*, Mode) final;
  void backward(Backend&, const std::vector<const float*>&, const float*, const float*,
                const std::vector<float*>&) final;
};

}  // namespace ts
