// The node model of the performance model: a layer's work as GEMMs, their arithmetic
// intensity (whole GEMM, and the cache-blocked macro-kernel of a BLIS-style GEMM) and the
// roofline time flops / min(gamma, I x mu) (docs/model.md "Node model").
#pragma once

#include <cstdint>
#include <string>

#include "perfmodel/cluster.h"

namespace ts::perf {

// C (m x n) += A (m x k) B (k x n), `count` times (the groups of a grouped convolution).
struct GemmShape {
  int64_t m = 0, n = 0, k = 0;
  int64_t count = 1;
  bool empty() const { return m <= 0 || n <= 0 || k <= 0 || count <= 0; }
};

// 2 m n k x count.
double gemm_flops(const GemmShape& g);
// Bytes of the three matrices, each moved once: (m n + m k + k n) x delta x count.
double gemm_bytes(const GemmShape& g, double delta);
// 2 m n k / ((m n + m k + k n) delta): the intensity of the whole GEMM.
double gemm_intensity(const GemmShape& g, double delta);
// 2 mc nc kc / ((mc nc + mc kc + kc nc) delta): the intensity of one macro-kernel of a GEMM
// blocked with `b`, its blocks cut to the GEMM where it is smaller (min(mc, m), ...). Without a
// blocking, the whole GEMM's.
double blocked_intensity(const GemmShape& g, const GemmBlocking& b, double delta);

enum class Bound { compute, memory, network };
const char* bound_name(Bound bound);

// What one worker can do: peak flop/s and memory bytes/s.
struct WorkerRate {
  double flops_per_s = 0;
  double bytes_per_s = 0;
};

struct RooflineTime {
  double seconds = 0;
  Bound bound = Bound::compute;
};

// flops / min(gamma, I mu) / efficiency; with no flops (a copy), bytes / mu / efficiency.
RooflineTime roofline_time(double flops, double bytes, double intensity, const WorkerRate& rate, double efficiency = 1.0);

}  // namespace ts::perf
