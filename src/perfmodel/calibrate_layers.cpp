// Per-layer efficiency for calibration.h: the model's real net on the cpu backend, each layer
// timed inside it (Net::set_layer_timing: layouts, fusion and reorders as in a run), against
// the roofline of the same layer on the measured node.
#include <algorithm>
#include <cmath>
#include <memory>
#include <vector>

#include "backend/backend_factory.h"
#include "core/rng.h"
#include "core/timer.h"
#include "nn/models.h"
#include "perfmodel/allreduce_model.h"
#include "perfmodel/calibration.h"
#include "perfmodel/layer_costs.h"
#include "perfmodel/step_model.h"

namespace ts::perf {
namespace {

double median(std::vector<double> v) {
  if (v.empty()) return 1.0;
  std::sort(v.begin(), v.end());
  const size_t mid = v.size() / 2;
  return v.size() % 2 ? v[mid] : 0.5 * (v[mid - 1] + v[mid]);
}

// 1.4826 x the median absolute deviation over the median: a standard deviation relative to the
// typical value that a few steps which lost their core do not inflate.
double robust_cv(const std::vector<double>& v) {
  const double m = median(v);
  if (v.size() < 3 || m <= 0) return 0.0;
  std::vector<double> deviation;
  for (double x : v) deviation.push_back(std::abs(x - m));
  return 1.4826 * median(deviation) / m;
}

// Seconds of each node's forward and backward, the median over the timed steps: on a shared
// machine a step that lost its core shows as one slow step, not as a slower mean. And the
// variation of the steps' totals (forward + backward of every node).
LayerTimes time_layers(Net& net, int64_t batch, const ModelInput& input, double budget_s) {
  const int64_t sample = input.sample.numel();
  std::vector<float> images(static_cast<size_t>(batch * sample));
  std::vector<int32_t> labels(static_cast<size_t>(batch));
  Rng rng(7);
  for (float& x : images) x = static_cast<float>(rng.uniform()) - 0.5f;
  for (size_t i = 0; i < labels.size(); ++i) labels[i] = static_cast<int32_t>(i % static_cast<size_t>(input.outputs));
  net.set_batch(batch);
  auto step = [&] {
    net.forward(images.data(), labels.data(), nullptr, Mode::train);
    net.backward();
  };
  step();  // warm-up: first touch, primitive creation
  net.set_layer_timing(true);
  const size_t nodes = static_cast<size_t>(net.node_count());
  std::vector<std::vector<double>> forward(nodes), backward(nodes);
  std::vector<double> totals;
  const double end = now_seconds() + budget_s;
  int steps = 0;
  do {
    net.reset_layer_seconds();
    step();
    double total = 0;
    for (size_t n = 1; n < nodes; ++n) {
      const auto [f, b] = net.layer_seconds(static_cast<int>(n));
      forward[n].push_back(f);
      backward[n].push_back(b);
      total += f + b;
    }
    totals.push_back(total);
  } while ((++steps < 3 || now_seconds() < end) && steps < 1000);
  net.set_layer_timing(false);
  LayerTimes out;
  out.nodes.resize(nodes);
  for (size_t n = 1; n < nodes; ++n) out.nodes[n] = {median(forward[n]), median(backward[n])};
  out.step_noise_cv = robust_cv(totals);
  return out;
}

}  // namespace

LayerTimes measure_layer_times(const std::string& model, int64_t batch, int threads, double budget_s) {
  std::unique_ptr<Backend> backend = make_backend("cpu");
  backend->set_threads(threads);
  const ModelInput input = model_expected_input(model);
  std::unique_ptr<Net> net = build_model(model, *backend, input, 1);
  return time_layers(*net, batch, input, budget_s);
}

std::map<std::string, PhaseEfficiency> layer_efficiency(const std::string& model, int64_t batch, int threads,
                                                        const ClusterSpec& node_only, const LayerTimes& measured) {
  ModelWorkRequest request;
  request.model = model;
  request.batch = batch;
  request.blocking = node_only.node.gemm_blocking;
  const std::vector<LayerWork> layers = model_work(request);
  const Placement alone = place_workers(node_only, 1, threads);
  const std::vector<LayerTime> roofline = layer_times(layers, worker_rate(node_only, alone, "fp32"), Calibration{}, model, false);
  std::map<std::string, PhaseEfficiency> out;
  for (size_t i = 0; i < layers.size(); ++i) {
    const auto [fp_s, bp_s] = measured.nodes[static_cast<size_t>(layers[i].node)];
    const LayerTime& r = roofline[i];
    PhaseEfficiency e;
    const double fp_model = r.seconds[0], bp_model = r.seconds[1] + r.seconds[2];
    if (fp_model > 0 && fp_s > 0) e.fp = fp_model / fp_s;
    if (bp_model > 0 && bp_s > 0) e.bp = bp_model / bp_s;
    if ((fp_model > 0 && fp_s > 0) || (bp_model > 0 && bp_s > 0)) out[layers[i].name] = e;
  }
  return out;
}

std::map<std::string, PhaseEfficiency> kind_medians(
    const std::map<std::string, std::map<std::string, PhaseEfficiency>>& all) {
  // The layers' kinds come from the models they belong to.
  std::map<std::string, std::pair<std::vector<double>, std::vector<double>>> by_kind;
  for (const auto& [model, layers] : all) {
    ModelWorkRequest request;
    request.model = model;
    for (const LayerWork& w : model_work(request)) {
      auto it = layers.find(w.name);
      if (it == layers.end()) continue;
      by_kind[w.kind].first.push_back(it->second.fp);
      by_kind[w.kind].second.push_back(it->second.bp);
    }
  }
  std::map<std::string, PhaseEfficiency> out;
  for (auto& [kind, v] : by_kind) out[kind] = {median(v.first), median(v.second)};
  return out;
}

}  // namespace ts::perf
