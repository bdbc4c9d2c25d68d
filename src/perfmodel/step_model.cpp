// See step_model.h.
#include "perfmodel/step_model.h"

#include <algorithm>

#include "dist/bucket_plan.h"

namespace ts::perf {
namespace {

PhaseEfficiency efficiency_of(const LayerEfficiency& c, const std::string& model, const LayerWork& layer) {
  auto m = c.layers.find(model);
  if (m != c.layers.end()) {
    auto l = m->second.find(layer.name);
    if (l != m->second.end()) return l->second;
  }
  auto k = c.kinds.find(layer.kind);
  if (k != c.kinds.end()) return k->second;
  return {};
}

// The time at which backward has finished the layer holding arena element `offset` (the
// parameters are in node order; backward runs from the last node to the first).
double ready_time(const std::vector<int64_t>& first_param, const std::vector<double>& done_at, int64_t offset) {
  for (size_t i = first_param.size(); i-- > 0;)
    if (first_param[i] >= 0 && first_param[i] <= offset) return done_at[i];
  return done_at.empty() ? 0.0 : done_at.front();
}

}  // namespace

std::vector<LayerTime> layer_times(const std::vector<LayerWork>& layers, const WorkerRate& rate, const Calibration& calibration,
                                   const std::string& model, bool gemm_only, double worker_cores) {
  const LayerEfficiency measured = calibration.for_cores(worker_cores > 0 ? worker_cores : static_cast<double>(calibration.threads));
  std::vector<LayerTime> times;
  for (const LayerWork& layer : layers) {
    LayerTime t;
    const PhaseEfficiency eff = efficiency_of(measured, model, layer);
    const bool counted = !gemm_only || layer.kind == "conv" || layer.kind == "fc";
    for (int p = 0; p < kPasses && counted; ++p) {
      const PassWork& w = layer.pass[static_cast<size_t>(p)];
      const RooflineTime r = roofline_time(w.flops, w.bytes, w.intensity_blocked, rate, p == 0 ? eff.fp : eff.bp);
      t.seconds[static_cast<size_t>(p)] = r.seconds;
      t.bound[static_cast<size_t>(p)] = r.bound;
    }
    const size_t slowest = static_cast<size_t>(std::max_element(t.seconds.begin(), t.seconds.end()) - t.seconds.begin());
    t.layer_bound = t.bound[slowest];
    times.push_back(t);
  }
  return times;
}

StepPrediction predict_step(const std::vector<LayerWork>& layers, const WorkerRate& rate, const AllreduceModel& allreduce,
                            const Calibration& calibration, const StepOptions& o) {
  StepPrediction s;
  s.layers = layer_times(layers, rate, calibration, o.model, o.gemm_only, o.worker_cores);
  // Backward, last layer first: when each layer's gradients are final.
  std::vector<int64_t> first_param(layers.size(), -1);
  std::vector<double> done_at(layers.size(), 0.0);
  int64_t params = 0;
  for (size_t i = 0; i < layers.size(); ++i) {
    if (layers[i].parameters > 0) first_param[i] = params;
    params += layers[i].parameters;
    s.forward += s.layers[i].seconds[0];
  }
  for (size_t i = layers.size(); i-- > 0;) {
    s.backward += s.layers[i].seconds[1] + s.layers[i].seconds[2];
    done_at[i] = s.backward;
  }
  for (size_t i = 0; i < layers.size(); ++i) {
    LayerTime& t = s.layers[i];
    t.comm = allreduce.average_seconds(4.0 * static_cast<double>(layers[i].parameters));
    if (t.comm > t.total()) t.layer_bound = Bound::network;
  }
  // SGD with momentum reads weights, gradients and momenta and writes weights and momenta.
  s.update = 5.0 * 4.0 * static_cast<double>(params) / rate.bytes_per_s;
  s.compute = s.forward + s.backward + s.update;
  s.data = o.data_bytes / rate.bytes_per_s;
  if (o.weight_average) {
    s.comm = allreduce.average_seconds(4.0 * static_cast<double>(params)) / static_cast<double>(std::max<int64_t>(1, o.period));
    s.exposed_comm = s.comm;
  } else {
    const int64_t bucket_elements = static_cast<int64_t>(o.bucket_mb * 1048576.0 / 4.0);
    const BucketPlan plan = BucketPlan::tile(params, bucket_elements);
    double free_at = 0;  // the communication thread
    for (size_t i = 0; i < plan.buckets.size(); ++i) {
      const Bucket& b = plan.buckets[i];
      const bool tail = i + 1 == plan.buckets.size();  // carries the loss: reduced after backward
      double cost = allreduce.average_seconds(4.0 * static_cast<double>(b.second));
      if (o.compression) {
        const CompressedBucketCost c = o.compression->bucket(b.first, b.second, tail);
        cost = c.seconds();
        s.compress += c.encode;
        s.decompress += c.decode;
        s.wire_bytes += c.wire_bytes;
      }
      const double ready = (o.overlap && !tail) ? ready_time(first_param, done_at, b.first) : s.backward;
      const double start = std::max(ready, free_at);
      free_at = start + cost;
      s.comm += cost;
      s.bucket_ready.push_back(ready);
      s.bucket_done.push_back(free_at);
    }
    s.exposed_comm = std::max(0.0, free_at - s.backward);
  }
  s.step = s.compute + s.exposed_comm + s.data;
  return s;
}

}  // namespace ts::perf
