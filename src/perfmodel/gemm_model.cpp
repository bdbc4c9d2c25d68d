// See gemm_model.h. The blocked intensity follows the BLIS/Goto analysis the material uses:
// per macro-kernel, 2 mc nc kc flops against the mc x kc, kc x nc and mc x nc blocks.
#include "perfmodel/gemm_model.h"

#include <algorithm>
#include <limits>

#include "core/enum_names.h"

namespace ts::perf {

double gemm_flops(const GemmShape& g) {
  if (g.empty()) return 0.0;
  return 2.0 * static_cast<double>(g.m) * static_cast<double>(g.n) * static_cast<double>(g.k) * static_cast<double>(g.count);
}

double gemm_bytes(const GemmShape& g, double delta) {
  if (g.empty()) return 0.0;
  const double m = static_cast<double>(g.m), n = static_cast<double>(g.n), k = static_cast<double>(g.k);
  return (m * n + m * k + k * n) * delta * static_cast<double>(g.count);
}

double gemm_intensity(const GemmShape& g, double delta) {
  if (g.empty()) return 0.0;
  return gemm_flops(g) / gemm_bytes(g, delta);
}

double blocked_intensity(const GemmShape& g, const GemmBlocking& b, double delta) {
  if (!b.known()) return gemm_intensity(g, delta);
  if (g.empty()) return 0.0;
  GemmShape block{std::min(g.m, b.mc), std::min(g.n, b.nc), std::min(g.k, b.kc), 1};
  return gemm_intensity(block, delta);
}

const char* bound_name(Bound bound) {
  static constexpr EnumName<Bound> kNames[] = {
      {Bound::compute, "compute"}, {Bound::memory, "memory"}, {Bound::network, "network"}};
  return name_in(kNames, bound);
}

RooflineTime roofline_time(double flops, double bytes, double intensity, const WorkerRate& rate, double efficiency) {
  const double eff = efficiency > 0 ? efficiency : 1.0;
  if (flops <= 0) {
    if (bytes <= 0) return {0.0, Bound::memory};
    return {bytes / rate.bytes_per_s / eff, Bound::memory};
  }
  const double memory_rate = intensity > 0 ? intensity * rate.bytes_per_s : std::numeric_limits<double>::infinity();
  if (rate.flops_per_s <= memory_rate) return {flops / rate.flops_per_s / eff, Bound::compute};
  return {flops / memory_rate / eff, Bound::memory};
}

}  // namespace ts::perf
