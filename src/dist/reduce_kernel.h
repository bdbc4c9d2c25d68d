// dist-internal: the arithmetic of the reductions (the sums of the all-reduce algorithms and the
// parameter server, the 1/N scaling of means), in a file of its own so that a build can swap it:
// trainscale-sim links dist/smpi/modelled_reduce_kernel.cpp instead, which charges the simulated
// node the memory time of these loops and leaves the data alone (docs/model.md "Simulation").
#pragma once

#include <cstdint>

namespace ts {

// dst[i] += src[i] for i < count (the arrays do not overlap).
void add_into(float* __restrict dst, const float* __restrict src, int64_t count);
// data[i] *= factor for i < count.
void scale(float* data, int64_t count, float factor);

}  // namespace ts
