// See step_model.h.
#include "perfmodel/step_model.h"

#include <algorithm>
#include <cmath>

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

// When backward ends and when the communication thread has reduced each bucket, both in
// seconds after backward starts: the buckets one after another on the thread, each starting
// once backward has progressed to its `ready` point (seconds of backward alone) and the bucket
// before it is done; while both run they progress at `rates`, alone at full speed.
struct OverlapTimeline {
  double backward_end = 0;
  std::vector<double> done;
};

OverlapTimeline run_overlap(double backward, const std::vector<double>& ready, const std::vector<double>& cost,
                            const ContentionRates& rates) {
  OverlapTimeline t;
  double now = 0, progress = 0, left = 0;  // wall clock, backward's progress, the job's work left
  size_t next = 0;                         // the bucket the thread takes next
  bool busy = false;
  t.backward_end = backward;
  while (next < ready.size() || busy) {
    const bool computing = progress < backward;
    if (!busy && (ready[next] <= progress || !computing)) {  // (every bucket is ready once backward ends)
      busy = true;
      left = cost[next];
    }
    const double rb = busy && computing ? rates.backward : 1.0;
    const double rc = computing ? rates.comm : 1.0;
    // The next event: the job ends, or the next bucket is ready, or backward ends.
    double dt = busy ? left / rc : (ready[next] - progress) / rb;
    const bool backward_ends = computing && (backward - progress) / rb <= dt;
    if (backward_ends) dt = (backward - progress) / rb;
    now += dt;
    if (computing) progress = backward_ends ? backward : progress + rb * dt;
    if (backward_ends) t.backward_end = now;
    if (busy) left = backward_ends && left - rc * dt > 0 ? left - rc * dt : 0;
    if (busy && left == 0) {
      t.done.push_back(now);
      busy = false;
      ++next;
    }
  }
  return t;
}

}  // namespace

ContentionRates contention_rates(const StepOptions& o) {
  ContentionRates r;
  if (o.node_cores <= 0 || !o.overlap || o.weight_average) return r;
  const double workers = static_cast<double>(std::max<int64_t>(1, o.workers_on_node));
  const double threads = std::max(1.0, o.compute_threads);
  const double alone = std::min(1.0, o.node_cores / (workers * threads));
  const double shared = std::min(1.0, o.node_cores / (workers * (threads + 1)));
  r.backward = shared / alone;
  r.comm = shared;
  return r;
}

double expected_max_standard_normal(int64_t n) {
  if (n <= 1) return 0.0;
  // E = integral of x n phi(x) Phi(x)^(n-1) dx, by the midpoint rule over [-9, 9] (the rest
  // weighs < 1e-18 for n up to millions).
  const double lo = -9.0, hi = 9.0;
  const int kSteps = 6000;
  const double dx = (hi - lo) / kSteps;
  double sum = 0;
  for (int i = 0; i < kSteps; ++i) {
    const double x = lo + (i + 0.5) * dx;
    const double phi = std::exp(-0.5 * x * x) / std::sqrt(2.0 * M_PI);
    const double cdf = 0.5 * std::erfc(-x / std::sqrt(2.0));
    sum += x * static_cast<double>(n) * phi * std::pow(cdf, static_cast<double>(n - 1)) * dx;
  }
  return sum;
}

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
    std::vector<double> costs;
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
      s.bucket_ready.push_back((o.overlap && !tail) ? ready_time(first_param, done_at, b.first) : s.backward);
      costs.push_back(cost);
      s.comm += cost;
    }
    const OverlapTimeline t = run_overlap(s.backward, s.bucket_ready, costs, contention_rates(o));
    s.bucket_done = t.done;
    s.contention = t.backward_end - s.backward;
    s.exposed_comm = std::max(0.0, t.done.back() - t.backward_end);
  }
  const double exchanges = o.weight_average ? static_cast<double>(std::max<int64_t>(1, o.period)) : 1.0;
  s.straggle = s.compute * o.compute_noise_cv * expected_max_standard_normal(o.workers) / std::sqrt(exchanges);
  s.step = s.compute + s.straggle + s.contention + s.exposed_comm + s.data;
  return s;
}

}  // namespace ts::perf
