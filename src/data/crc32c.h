// CRC-32C (Castagnoli, reflected polynomial 0x82F63B78) and TFRecord's masked form, for the
// framing of `records` shards (records_format.h). Every read of a record checks the CRC of its
// whole payload, so it must be fast: the byte-at-a-time table ran at about 0.45 GB/s, 0.18 ms of
// an 80 KB JPEG record, a tenth of its decode and transform; SSE4.2's crc32 instruction (x86-64,
// detected at run time) runs at several GB/s. crc32c("123456789") = 0xE3069283 (the RFC 3720
// check value; tests/cpp/test_records.cpp checks both paths against each other).
#pragma once

#include <cstddef>
#include <cstdint>

namespace ts {

// CRC-32C of `bytes` bytes at `data`, continuing from `crc` (0 for a fresh checksum).
uint32_t crc32c(const void* data, size_t bytes, uint32_t crc = 0);

// The table-driven reference (one byte per step), for any CPU; crc32c() gives the same value.
uint32_t crc32c_reference(const void* data, size_t bytes, uint32_t crc = 0);

// TFRecord's mask of a CRC stored next to the data it covers: ((crc >> 15) | (crc << 17)) + 0xa282ead8.
uint32_t mask_crc32c(uint32_t crc);

// mask_crc32c(crc32c(data, bytes)): what a TFRecord frame stores.
inline uint32_t masked_crc32c(const void* data, size_t bytes) { return mask_crc32c(crc32c(data, bytes)); }

}  // namespace ts
