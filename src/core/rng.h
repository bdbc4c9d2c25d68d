// A small, fully specified random generator (SplitMix64-seeded xoshiro256**) so that
// initialisation, shuffles and dropout masks are identical across platforms and library
// versions (std::*_distribution is implementation-defined).
#pragma once

#include <array>
#include <cstddef>
#include <cstdint>

namespace ts {

class Rng {
 public:
  explicit Rng(uint64_t seed = 1);
  uint64_t next_u64();
  // Uniform in [0, 1).
  double uniform();
  // Uniform integer in [0, n).
  uint64_t below(uint64_t n);
  // Standard normal (Box-Muller).
  double normal();

  // The whole state as words (xoshiro's four, the Box-Muller spare flag and value), so that a
  // checkpoint can continue a stream exactly where it stopped.
  static constexpr size_t kStateWords = 6;
  std::array<uint64_t, kStateWords> state() const;
  void set_state(const std::array<uint64_t, kStateWords>& words);

 private:
  uint64_t s_[4];
  bool has_spare_ = false;
  double spare_ = 0.0;
};

// Mixes several integers into one seed (for per-epoch, per-rank, per-layer streams).
uint64_t seed_mix(uint64_t a, uint64_t b, uint64_t c = 0);

}  // namespace ts
