#include "core/rng.h"

#include <cmath>
#include <cstring>

namespace ts {
namespace {

uint64_t splitmix64(uint64_t& x) {
  uint64_t z = (x += 0x9e3779b97f4a7c15ULL);
  z = (z ^ (z >> 30)) * 0xbf58476d1ce4e5b9ULL;
  z = (z ^ (z >> 27)) * 0x94d049bb133111ebULL;
  return z ^ (z >> 31);
}

uint64_t rotl(uint64_t x, int k) { return (x << k) | (x >> (64 - k)); }

}  // namespace

Rng::Rng(uint64_t seed) {
  uint64_t x = seed;
  for (auto& s : s_) s = splitmix64(x);
}

uint64_t Rng::next_u64() {
  const uint64_t result = rotl(s_[1] * 5, 7) * 9;
  const uint64_t t = s_[1] << 17;
  s_[2] ^= s_[0];
  s_[3] ^= s_[1];
  s_[1] ^= s_[2];
  s_[0] ^= s_[3];
  s_[2] ^= t;
  s_[3] = rotl(s_[3], 45);
  return result;
}

double Rng::uniform() { return static_cast<double>(next_u64() >> 11) * 0x1.0p-53; }

uint64_t Rng::below(uint64_t n) {
  // Lemire's multiply-shift; bias is negligible for the sizes used here (n < 2^32).
  return static_cast<uint64_t>((static_cast<__uint128_t>(next_u64()) * n) >> 64);
}

double Rng::normal() {
  if (has_spare_) {
    has_spare_ = false;
    return spare_;
  }
  double u1 = uniform(), u2 = uniform();
  if (u1 < 1e-300) u1 = 1e-300;
  double r = std::sqrt(-2.0 * std::log(u1));
  spare_ = r * std::sin(2.0 * M_PI * u2);
  has_spare_ = true;
  return r * std::cos(2.0 * M_PI * u2);
}

std::array<uint64_t, Rng::kStateWords> Rng::state() const {
  uint64_t spare_bits = 0;
  std::memcpy(&spare_bits, &spare_, sizeof spare_bits);
  return {s_[0], s_[1], s_[2], s_[3], has_spare_ ? 1u : 0u, spare_bits};
}

void Rng::set_state(const std::array<uint64_t, kStateWords>& words) {
  for (size_t i = 0; i < 4; ++i) s_[i] = words[i];
  has_spare_ = words[4] != 0;
  std::memcpy(&spare_, &words[5], sizeof spare_);
}

uint64_t seed_mix(uint64_t a, uint64_t b, uint64_t c) {
  uint64_t x = a * 0x9e3779b97f4a7c15ULL;
  uint64_t h = splitmix64(x);
  x = h ^ b;
  h = splitmix64(x);
  x = h ^ c;
  return splitmix64(x);
}

}  // namespace ts
