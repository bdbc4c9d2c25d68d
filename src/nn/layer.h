// The layer base class: a forward/backward pair over explicit per-sample shapes. A layer is
// planned once per minibatch size (plan(): it plans its backend ops for the descs of its inputs
// and returns its output's desc) and then only executes. It owns the device buffers its backward
// needs (pool workspace, BN batch statistics, dropout mask, softmax probabilities), allocated in
// plan(); its parameters, gradients and non-trainable state are slices of the net's flat arenas
// (device memory, plain f32), bound with bind(). Layers call only the Backend table.
#pragma once

#include <cstdint>
#include <string>
#include <vector>

#include "backend/backend.h"
#include "backend/tensor.h"
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
  // Initialises the layer's parameters (param_count() floats) and state (state_count() floats)
  // deterministically from `rng`, in host arrays that the net then copies to its arenas.
  virtual void init(Rng& rng, float* params, float* state) {}
  // Plans the layer's ops for minibatch `mb` on inputs with descs `srcs` (as their producers
  // planned them; dims (mb, src_shapes[i]...) or a backend's view of them) and returns the
  // output's desc. Allocates the layer-owned device buffers. Overrides call Layer::plan_batch.
  virtual TensorDesc plan(Backend& backend, int64_t mb, const std::vector<TensorDesc>& srcs) = 0;

  // srcs[i] (mb, src_shapes[i]...) -> dst (mb, output shape...), with the planned descs.
  virtual void forward(Backend& backend, const std::vector<Tensor>& srcs, const Tensor& dst,
                       Mode mode) = 0;
  // diff_dst (dst's desc) -> diff_srcs[i] (srcs[i]'s desc); a diff_srcs[i] without data means
  // that input needs no gradient (the net input). Parameter gradients overwrite the bound grads.
  // srcs and dst are the tensors of the preceding forward (train mode).
  virtual void backward(Backend& backend, const std::vector<Tensor>& srcs, const Tensor& dst,
                        const Tensor& diff_dst, const std::vector<Tensor>& diff_srcs) = 0;

  // name, kind, descriptor at mb=1, parameters, forward FLOPs per sample.
  virtual LayerInfo info() const;
  virtual bool is_loss() const { return false; }
  // Fusion (the Net calls this at finalize for a layer whose only reader is a ReLU): a layer that
  // can apply that ReLU inside its own forward (conv, batch norm, add) does so from now on and
  // returns true. Such a layer's backward must not read its own dst (it then holds relu(dst)).
  virtual bool fuse_relu() { return false; }
  // The layer's random stream (dropout's masks) as words, for checkpoints: a layer given back
  // these words draws what the original would have drawn next. Empty for layers without one.
  virtual std::vector<uint64_t> rng_state() const { return {}; }
  virtual void set_rng_state(const std::vector<uint64_t>& words) {}

  const std::vector<Shape>& src_shapes() const { return src_shapes_; }
  const Shape& dst_shape() const { return dst_shape_; }

 protected:
  // Throws ConfigError "layer <name> (<kind>): <what>".
  [[noreturn]] void fail(const std::string& what) const;
  // Checks the number of inputs.
  void expect_inputs(const std::vector<Shape>& src_shapes, size_t count) const;
  // Records the minibatch a plan is for (every plan() override calls it first).
  void plan_batch(int64_t mb) { mb_ = mb; }
  // Records the input shapes and the output shape `dst` and returns it (setup() overrides end so).
  const Shape& set_shapes(const std::vector<Shape>& src_shapes, Shape dst) {
    src_shapes_ = src_shapes;
    dst_shape_ = std::move(dst);
    return dst_shape_;
  }

  std::string name_;
  int64_t mb_ = 0;
  float* params_ = nullptr;
  float* grads_ = nullptr;
  float* state_ = nullptr;
  std::vector<Shape> src_shapes_;
  Shape dst_shape_;
};

// The overrides of Layer that every layer of nn/layers declares (setup, plan, forward, backward,
// info; defined in its .cpp), in its public section: TS_LAYER_OVERRIDES;
#define TS_LAYER_OVERRIDES                                                                                    \
  Shape setup(const std::vector<Shape>& src_shapes) override;                                                 \
  TensorDesc plan(Backend& backend, int64_t mb, const std::vector<TensorDesc>& srcs) override;                \
  void forward(Backend& backend, const std::vector<Tensor>& srcs, const Tensor& dst, Mode mode) override;     \
  void backward(Backend& backend, const std::vector<Tensor>& srcs, const Tensor& dst, const Tensor& diff_dst, \
                const std::vector<Tensor>& diff_srcs) override;                                               \
  LayerInfo info() const override

// A loss: reads one input (predictions) plus labels or targets, and produces a scalar.
// The net calls forward_loss/backward_loss instead of forward/backward.
class LossLayer : public Layer {
 public:
  using Layer::Layer;
  bool is_loss() const override { return true; }
  // True for classification losses (labels), false for regression (targets).
  virtual bool is_classifier() const = 0;
  // src (mb, outputs) on the device; labels (mb) or targets (mb, outputs) in host memory
  // (checked, then copied to the device). Writes the mean loss to the device scalar `loss`;
  // keeps what backward needs (probabilities, the labels/targets).
  virtual void forward_loss(Backend& backend, const Tensor& src, const int32_t* labels,
                            const float* targets, float* loss) = 0;
  // diff_src (src's desc) of the mean loss, times the loss scale.
  virtual void backward_loss(Backend& backend, const Tensor& src, const Tensor& diff_src) = 0;
  // The factor backward multiplies the loss gradient by: fp16 training's dynamic loss scale
  // (the optimizer divides it out again) times a share's weight, 1 otherwise; with a device
  // factor (loss_reads: log) the device's scale times `factor`.
  void set_loss_scale(LossGradScale scale) { loss_scale_ = scale; }

  void forward(Backend&, const std::vector<Tensor>&, const Tensor&, Mode) final;
  void backward(Backend&, const std::vector<Tensor>&, const Tensor&, const Tensor&,
                const std::vector<Tensor>&) final;

 protected:
  LossGradScale loss_scale_;
};

}  // namespace ts
