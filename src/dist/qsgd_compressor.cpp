// QSGD quantisation (see qsgd_compressor.h).
#include "dist/qsgd_compressor.h"

#include <algorithm>
#include <cmath>
#include <cstring>

#include "core/error.h"

namespace ts {
namespace {

int64_t group_count(int64_t count, int64_t group) { return (count + group - 1) / group; }

// Codes are packed least significant bit first: element i occupies bits [i*bits, (i+1)*bits).
void put_code(uint8_t* packed, int64_t i, int bits, uint32_t code) {
  const int64_t bit = i * bits;
  const uint32_t shifted = code << (bit % 8);
  packed[bit / 8] |= static_cast<uint8_t>(shifted);
  if ((bit % 8) + bits > 8) packed[bit / 8 + 1] |= static_cast<uint8_t>(shifted >> 8);
}

uint32_t get_code(const uint8_t* packed, int64_t i, int bits) {
  const int64_t bit = i * bits;
  uint32_t word = packed[bit / 8];
  if ((bit % 8) + bits > 8) word |= static_cast<uint32_t>(packed[bit / 8 + 1]) << 8;
  return (word >> (bit % 8)) & ((1u << bits) - 1u);
}

}  // namespace

int64_t qsgd_wire_bytes(int64_t count, int bits, int64_t group) {
  return group_count(count, group) * static_cast<int64_t>(sizeof(float)) + (count * bits + 7) / 8;
}

void qsgd_encode(const float* src, int64_t count, int bits, int64_t group, Rng& rng, uint8_t* wire) {
  TS_CHECK(bits >= 2 && bits <= 8 && group > 0, "qsgd: bits must be 2..8 and the group > 0");
  const int64_t groups = group_count(count, group);
  uint8_t* packed = wire + groups * static_cast<int64_t>(sizeof(float));
  std::memset(packed, 0, static_cast<size_t>((count * bits + 7) / 8));
  const uint32_t levels = (1u << (bits - 1)) - 1u;  // s
  const uint32_t sign_bit = 1u << (bits - 1);
  for (int64_t g = 0; g < groups; ++g) {
    const int64_t begin = g * group, end = std::min(count, begin + group);
    double sum = 0;
    for (int64_t i = begin; i < end; ++i) sum += static_cast<double>(src[i]) * src[i];
    const float norm = static_cast<float>(std::sqrt(sum));
    std::memcpy(wire + g * static_cast<int64_t>(sizeof(float)), &norm, sizeof norm);
    for (int64_t i = begin; i < end; ++i) {
      const double u = rng.uniform();  // drawn for every element, so the stream does not depend on the data
      if (norm == 0) continue;
      const double scaled = std::fabs(static_cast<double>(src[i])) / norm * levels;
      const double floor_level = std::floor(scaled);
      uint32_t level = static_cast<uint32_t>(floor_level) + (u < scaled - floor_level ? 1u : 0u);
      level = std::min(level, levels);  // |x| / norm <= 1 up to rounding
      put_code(packed, i, bits, (src[i] < 0 ? sign_bit : 0u) | level);
    }
  }
}

void qsgd_decode_add(const uint8_t* wire, int64_t count, int bits, int64_t group, float* dst) {
  const int64_t groups = group_count(count, group);
  const uint8_t* packed = wire + groups * static_cast<int64_t>(sizeof(float));
  const uint32_t levels = (1u << (bits - 1)) - 1u;
  const uint32_t sign_bit = 1u << (bits - 1);
  for (int64_t g = 0; g < groups; ++g) {
    float norm = 0;
    std::memcpy(&norm, wire + g * static_cast<int64_t>(sizeof(float)), sizeof norm);
    const float unit = norm / static_cast<float>(levels);
    const int64_t begin = g * group, end = std::min(count, begin + group);
    for (int64_t i = begin; i < end; ++i) {
      const uint32_t code = get_code(packed, i, bits);
      const float magnitude = unit * static_cast<float>(code & (sign_bit - 1u));
      dst[i] += (code & sign_bit) ? -magnitude : magnitude;
    }
  }
}

}  // namespace ts
