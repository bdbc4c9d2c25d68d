// fp32 <-> fp16 / bf16, round to nearest even (see half_codec.h).
#include "dist/half_codec.h"

#include <cmath>
#include <cstring>

namespace ts {
namespace {

uint32_t bits_of(float f) {
  uint32_t x = 0;
  std::memcpy(&x, &f, sizeof x);
  return x;
}

float float_of(uint32_t x) {
  float f = 0;
  std::memcpy(&f, &x, sizeof f);
  return f;
}

}  // namespace

uint16_t fp16_from_float(float value) {
  const uint32_t x = bits_of(value);
  const uint32_t sign = (x >> 16) & 0x8000u;
  const uint32_t magnitude = x & 0x7fffffffu;
  if (magnitude >= 0x7f800000u)  // inf stays inf; NaN stays a (quiet) NaN
    return static_cast<uint16_t>(sign | 0x7c00u | (magnitude > 0x7f800000u ? 0x200u : 0u));
  if (magnitude >= 0x477ff000u) return static_cast<uint16_t>(sign | 0x7c00u);  // >= 65520: rounds to inf
  if (magnitude < 0x38800000u) {
    // Below 2^-14: a subnormal half m * 2^-24, m = |value| * 2^24 = significand * 2^(e - 126)
    // rounded to nearest even (integer arithmetic: gradients live here, and libm's nearbyint
    // costs more than the rest of the conversion).
    const uint32_t exponent = magnitude >> 23;
    const uint32_t shift = 126u - exponent;  // >= 14
    if (shift > 24) return static_cast<uint16_t>(sign);  // below 2^-25: rounds to zero
    const uint32_t significand = (magnitude & 0x7fffffu) | 0x800000u;
    const uint32_t kept = significand >> shift, rest = significand & ((1u << shift) - 1u), half = 1u << (shift - 1);
    const uint32_t rounded = kept + ((rest > half || (rest == half && (kept & 1u))) ? 1u : 0u);
    return static_cast<uint16_t>(sign | rounded);
  }
  // Normal: rebias the exponent (127 -> 15) and round the 13 dropped mantissa bits to even; a
  // carry into the exponent is the right result.
  const uint32_t rounded = magnitude + 0xfffu + ((magnitude >> 13) & 1u);
  return static_cast<uint16_t>(sign | ((rounded - 0x38000000u) >> 13));
}

float float_from_fp16(uint16_t half) {
  const uint32_t sign = static_cast<uint32_t>(half & 0x8000u) << 16;
  const uint32_t exponent = (half >> 10) & 0x1fu;
  const uint32_t mantissa = half & 0x3ffu;
  if (exponent == 0) {  // zero or subnormal: mantissa * 2^-24, exact in fp32
    const float magnitude = static_cast<float>(mantissa) * 5.9604644775390625e-8f;
    return sign ? -magnitude : magnitude;
  }
  if (exponent == 31) return float_of(sign | 0x7f800000u | (mantissa << 13));
  return float_of(sign | ((exponent + 112u) << 23) | (mantissa << 13));
}

uint16_t bf16_from_float(float value) {
  const uint32_t x = bits_of(value);
  if ((x & 0x7fffffffu) > 0x7f800000u) return static_cast<uint16_t>((x >> 16) | 0x40u);  // quiet NaN
  return static_cast<uint16_t>((x + 0x7fffu + ((x >> 16) & 1u)) >> 16);
}

float float_from_bf16(uint16_t half) { return float_of(static_cast<uint32_t>(half) << 16); }

}  // namespace ts
