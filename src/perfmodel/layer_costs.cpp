// See layer_costs.h. The net is built by the model registry itself (build_model_graph), so the
// model's layers are never described twice; only the GEMM shapes and byte counts live here.
#include "perfmodel/layer_costs.h"

#include <memory>

#include "backend/backend_factory.h"
#include "backend/descriptors.h"
#include "core/error.h"
#include "nn/layers/activation.h"
#include "nn/models.h"
#include "nn/net.h"

namespace ts::perf {
namespace {

PassWork gemm_pass(const GemmShape& g, const ModelWorkRequest& r) {
  PassWork w;
  w.gemm = g;
  w.flops = gemm_flops(g);
  w.bytes = gemm_bytes(g, r.delta);
  w.intensity_gemm = gemm_intensity(g, r.delta);
  w.intensity_blocked = blocked_intensity(g, r.blocking, r.delta);
  return w;
}

PassWork memory_pass(double flops, double elements_moved, double delta) {
  PassWork w;
  w.flops = flops;
  w.bytes = elements_moved * delta;
  w.intensity_gemm = w.bytes > 0 ? flops / w.bytes : 0.0;
  w.intensity_blocked = w.intensity_gemm;
  return w;
}

// A ReLU the CPU backend fuses into its input's forward: the rule of Net::decide_fusion (its
// input is a conv, batch norm or two-input add that only it reads).
bool is_fused_relu(Net& net, int node, const std::vector<int>& consumers) {
  Layer* layer = net.layer(node);
  const std::vector<int>& inputs = net.node_inputs(node);
  if (layer->kind() != "relu" || inputs.size() != 1 || inputs[0] == 0) return false;
  const int in = inputs[0];
  if (consumers[static_cast<size_t>(in)] != 1) return false;
  const std::string kind = net.layer(in)->kind();
  return kind == "conv" || kind == "bn" || (kind == "add" && net.node_inputs(in).size() == 2);
}

// The passes of a layer that only moves memory (elements of its tensors for the minibatch).
void memory_layer(LayerWork& w, Layer& layer, const ModelWorkRequest& r, double fp_flops) {
  const double mb = static_cast<double>(r.batch);
  const double out = static_cast<double>(layer.dst_shape().numel()) * mb;
  double in = 0;
  for (const Shape& s : layer.src_shapes()) in += static_cast<double>(s.numel()) * mb;
  const double inputs = static_cast<double>(layer.src_shapes().size());
  double fp = in + out, gc = in + out;  // read one side, write the other
  if (w.kind == "bn") {
    fp = 3 * out;   // statistics pass, normalising pass (read), write
    gc = 5 * out;   // reduction pass (src, diff_dst), then src, diff_dst read and diff_src written
  } else if (dynamic_cast<const Activation*>(&layer) != nullptr) {
    fp = w.fused ? 0 : 2 * out;
    gc = 3 * out;   // dst, diff_dst read, diff_src written
  } else if (w.kind == "add") {
    fp = (inputs + 1) * out;
    gc = (inputs + 1) * out;
  } else if (w.kind == "dropout") {
    fp = 2 * out + out / r.delta;  // and the byte mask
    gc = 2 * out + out / r.delta;
  } else if (w.kind == "flatten") {
    fp = gc = 0;  // a view
  }
  w.pass[0] = memory_pass(w.fused ? 0 : fp_flops, fp, r.delta);
  w.pass[1] = memory_pass(fp_flops, gc, r.delta);
}

LayerWork layer_work(Net& net, int node, const std::vector<int>& consumers, const ModelWorkRequest& r) {
  Layer& layer = *net.layer(node);
  const LayerInfo info = layer.info();
  LayerWork w;
  w.node = node;
  w.name = info.name;
  w.kind = info.kind;
  w.descriptor = info.descriptor;
  w.parameters = info.parameters;
  w.fused = is_fused_relu(net, node, consumers);
  const std::vector<int>& inputs = net.node_inputs(node);
  const bool reads_only_input = inputs.size() == 1 && inputs[0] == 0;
  if (w.kind == "conv" || w.kind == "fc") {
    const auto gemms = w.kind == "conv" ? conv_gemms(info.descriptor, r.batch) : fc_gemms(info.descriptor, r.batch);
    for (int p = 0; p < kPasses; ++p) w.pass[static_cast<size_t>(p)] = gemm_pass(gemms[static_cast<size_t>(p)], r);
  } else {
    memory_layer(w, layer, r, static_cast<double>(info.flops) * static_cast<double>(r.batch));
  }
  if (reads_only_input) w.pass[static_cast<size_t>(Pass::bp_gc)] = PassWork{};  // the image needs no gradient
  return w;
}

}  // namespace

std::array<GemmShape, kPasses> conv_gemms(const std::string& conv_descriptor, int64_t mb) {
  const ConvDesc d = ConvDesc::parse(conv_descriptor);
  const int64_t g = d.groups;
  const int64_t spatial = mb * d.oh() * d.ow();       // columns of the im2col matrix
  const int64_t patch = (d.ic / g) * d.kh * d.kw;     // rows of the im2col matrix
  const int64_t out = d.oc / g;
  return {GemmShape{out, spatial, patch, g}, GemmShape{patch, spatial, out, g}, GemmShape{out, patch, spatial, g}};
}

std::array<GemmShape, kPasses> fc_gemms(const std::string& fc_descriptor, int64_t mb) {
  const FcDesc d = FcDesc::parse(fc_descriptor);
  return {GemmShape{mb, d.oc, d.ic, 1}, GemmShape{mb, d.ic, d.oc, 1}, GemmShape{d.oc, d.ic, mb, 1}};
}

std::vector<LayerWork> model_work(const ModelWorkRequest& r) {
  if (r.batch < 1) throw ConfigError("the performance model needs a minibatch of at least 1 (got " + std::to_string(r.batch) + ")");
  // The graph only: the ref backend is held by the net, never called (no arenas are allocated).
  std::unique_ptr<Backend> backend = make_backend("ref");
  std::unique_ptr<Net> net = build_model_graph(r.model, *backend, model_expected_input(r.model), r.dropout);
  std::vector<int> consumers(static_cast<size_t>(net->node_count()), 0);
  for (int n = 1; n < net->node_count(); ++n)
    for (int in : net->node_inputs(n)) consumers[static_cast<size_t>(in)]++;
  std::vector<LayerWork> layers;
  for (int n = 1; n < net->node_count(); ++n) layers.push_back(layer_work(*net, n, consumers, r));
  return layers;
}

}  // namespace ts::perf
