// CRC-32C (see crc32c.h): SSE4.2's crc32 instruction 8 bytes per step where the CPU has it (x86-64,
// checked once at run time), else the byte-at-a-time table of the reflected Castagnoli polynomial.
#include "data/crc32c.h"

#include <array>
#include <cstring>

#if defined(__x86_64__)
#include <nmmintrin.h>
#endif

namespace ts {
namespace {

constexpr uint32_t kPolynomial = 0x82F63B78;  // 0x1EDC6F41 bit-reversed

constexpr std::array<uint32_t, 256> make_table() {
  std::array<uint32_t, 256> table{};
  for (uint32_t i = 0; i < 256; ++i) {
    uint32_t c = i;
    for (int k = 0; k < 8; ++k) c = c & 1 ? (c >> 1) ^ kPolynomial : c >> 1;
    table[i] = c;
  }
  return table;
}

constexpr std::array<uint32_t, 256> kTable = make_table();

#if defined(__x86_64__)
// The instruction computes the same reflected CRC-32C without the pre- and post-inversion.
__attribute__((target("sse4.2"))) uint32_t crc32c_sse42(const uint8_t* p, size_t bytes, uint32_t crc) {
  uint64_t c = ~crc;
  for (; bytes >= 8; bytes -= 8, p += 8) {
    uint64_t word;
    std::memcpy(&word, p, 8);  // unaligned
    c = _mm_crc32_u64(c, word);
  }
  auto c32 = static_cast<uint32_t>(c);
  for (; bytes > 0; --bytes) c32 = _mm_crc32_u8(c32, *p++);
  return ~c32;
}

const bool kHasSse42 = __builtin_cpu_supports("sse4.2");
#endif

}  // namespace

uint32_t crc32c_reference(const void* data, size_t bytes, uint32_t crc) {
  const auto* p = static_cast<const uint8_t*>(data);
  crc = ~crc;
  for (size_t i = 0; i < bytes; ++i) crc = kTable[(crc ^ p[i]) & 0xFF] ^ (crc >> 8);
  return ~crc;
}

uint32_t crc32c(const void* data, size_t bytes, uint32_t crc) {
#if defined(__x86_64__)
  if (kHasSse42) return crc32c_sse42(static_cast<const uint8_t*>(data), bytes, crc);
#endif
  return crc32c_reference(data, bytes, crc);
}

uint32_t mask_crc32c(uint32_t crc) { return ((crc >> 15) | (crc << 17)) + 0xa282ead8u; }

}  // namespace ts
