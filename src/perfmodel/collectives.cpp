// See collectives.h.
#include "perfmodel/collectives.h"

#include <algorithm>
#include <cmath>

namespace ts::perf {
namespace {

double ceil_log2(int64_t p) {
  double steps = 0;
  for (int64_t reach = 1; reach < p; reach *= 2) steps += 1;
  return steps;
}

double product(const std::vector<int64_t>& dims) {
  double p = 1;
  for (int64_t d : dims) p *= static_cast<double>(d);
  return p;
}

double fraction(double p) { return p > 0 ? (p - 1) / p : 0.0; }

}  // namespace

CostTerms mst_broadcast(const std::vector<int64_t>& dims, double m) {
  double steps = 0;
  for (int64_t d : dims) steps += ceil_log2(d);
  return {steps, steps * m, 0};
}

CostTerms mst_reduce(const std::vector<int64_t>& dims, double m) {
  double steps = 0;
  for (int64_t d : dims) steps += ceil_log2(d);
  return {steps, steps * m, steps * m};
}

CostTerms bkt_allgather(const std::vector<int64_t>& dims, double m) {
  double steps = 0;
  for (int64_t d : dims) steps += static_cast<double>(d - 1);
  return {steps, fraction(product(dims)) * m, 0};
}

CostTerms bkt_reduce_scatter(const std::vector<int64_t>& dims, double m) {
  double steps = 0;
  for (int64_t d : dims) steps += static_cast<double>(d - 1);
  const double f = fraction(product(dims));
  return {steps, f * m, f * m};
}

CostTerms mst_allreduce(const std::vector<int64_t>& dims, double m) { return mst_reduce(dims, m) + mst_broadcast(dims, m); }

CostTerms bkt_allreduce(const std::vector<int64_t>& dims, double m) {
  return bkt_reduce_scatter(dims, m) + bkt_allgather(dims, m);
}

CostTerms ring_allreduce(int64_t p, double m) {
  CostTerms terms = bkt_allreduce({p}, m);
  // Pipelined (chunks of m / p in slices): while slice j is added, the next ones are on the
  // wire, so with more than one slice per chunk only the last slice's addition stays on the
  // critical path. That assumes the link is slower than the addition (beta >= gamma), as on
  // every cluster file here; the simulator, running the same code, agrees (test_cli_sim.py).
  const double chunk = p > 0 ? m / static_cast<double>(p) : 0.0;
  if (chunk > kRingSliceBytes) terms.reduced = kRingSliceBytes;
  return terms;
}

CostTerms tree_allreduce(int64_t p, double m) { return mst_allreduce({p}, m); }

CostTerms butterfly_allreduce(int64_t p, double m) {
  int64_t p2 = 1;
  double steps = 0;
  for (; p2 * 2 <= p; p2 *= 2) steps += 1;
  if (p2 == p) return {steps, steps * m, steps * m};
  // The ranks above the largest power of two fold in first (a message and an addition) and
  // get the total back after (a message): dist/allreduce.cpp and MPICH do it this way.
  return {steps + 2, (steps + 2) * m, (steps + 1) * m};
}

CostTerms rabenseifner_allreduce(int64_t p, double m) {
  const double f = fraction(static_cast<double>(p));
  return {2 * ceil_log2(p), 2 * f * m, f * m};
}

CostTerms ps_allreduce(int64_t p, double m) {
  const double others = static_cast<double>(std::max<int64_t>(0, p - 1));
  return {2 * others, 2 * others * m, others * m};
}

CostTerms shm_allreduce(int64_t p, double m) {
  if (p <= 1) return {};
  const double step = 256.0 * 1024.0;
  const double chunks = std::max(1.0, std::ceil(m / step));
  if (p == 2) return {chunks + 1, m, m};
  const double f = fraction(static_cast<double>(p));
  return {chunks + 2, 2 * f * m, f * m};
}

std::vector<int64_t> subgrid_dims(int64_t p, const std::vector<int64_t>& dims) {
  // Grow the smallest dimension that still has room until the grid holds p ranks: the most
  // nearly square sub-grid of the machine's grid.
  std::vector<int64_t> out(dims.size(), 1);
  auto holds = [&] {
    double n = 1;
    for (int64_t d : out) n *= static_cast<double>(d);
    return n >= static_cast<double>(p);
  };
  while (!holds()) {
    size_t best = dims.size();
    for (size_t k = 0; k < dims.size(); ++k)
      if (out[k] < dims[k] && (best == dims.size() || out[k] < out[best])) best = k;
    if (best == dims.size()) break;  // the whole grid: more ranks than nodes
    out[best]++;
  }
  return out;
}

}  // namespace ts::perf
