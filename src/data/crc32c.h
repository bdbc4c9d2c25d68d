// CRC-32C (Castagnoli, reflected polynomial 0x82F63B78) and TFRecord's masked form, for the
// framing of `records` shards (records_format.h). Table-driven, one byte per step: a record's
// checksum costs far less than reading it. crc32c("123456789") = 0xE3069283 (the RFC 3720 check
// value; tests/cpp/test_records.cpp).
#pragma once

#include <cstddef>
#include <cstdint>

namespace ts {

// CRC-32C of `bytes` bytes at `data`, continuing from `crc` (0 for a fresh checksum).
uint32_t crc32c(const void* data, size_t bytes, uint32_t crc = 0);

// TFRecord's mask of a CRC stored next to the data it covers: ((crc >> 15) | (crc << 17)) + 0xa282ead8.
uint32_t mask_crc32c(uint32_t crc);

// mask_crc32c(crc32c(data, bytes)): what a TFRecord frame stores.
inline uint32_t masked_crc32c(const void* data, size_t bytes) { return mask_crc32c(crc32c(data, bytes)); }

}  // namespace ts
