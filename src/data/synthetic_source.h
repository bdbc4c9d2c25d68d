// Data sets generated from a seed, no I/O: random tensors for throughput runs, and the
// single-neuron task x ~ U[0,1) -> [x >= 0.5] (SHM-Learn-Dist experiment). Sample i is
// generated in read() from (seed, i) alone, so nothing is stored, any index can be read in any
// order by any thread, and the bytes never depend on the loader's thread count.
#pragma once

#include <cstdint>
#include <memory>

#include "data/sample_source.h"

namespace ts {

// `count` samples of spec.sample, values ~ N(0,1) (already "normalised"); labels uniform in
// [0, spec.classes) when classes > 0, else spec.outputs targets ~ U[0,1). Throws ConfigError
// for count < 1, an empty sample shape, or neither classes nor outputs.
std::unique_ptr<SampleSource> make_synthetic_source(const SampleSpec& spec, int64_t count, uint64_t seed);

// `count` samples of shape (1): x ~ U[0,1), one target [x >= 0.5]. Throws ConfigError for count < 1.
std::unique_ptr<SampleSource> make_neuron_source(int64_t count, uint64_t seed);

}  // namespace ts
