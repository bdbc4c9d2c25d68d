// SHA-256 (FIPS 180-4), for checksums a reader outside the program can recompute: the run
// file's summary/params_sha256 (the final parameters) and a checkpoint's params_sha256; and
// HMAC-SHA256 (RFC 2104) for the S3 request signatures of blob storage. Plain C++, no library;
// tested against the FIPS and RFC 4231 known answers (tests/cpp/test_sha256.cpp).
#pragma once

#include <array>
#include <cstddef>
#include <cstdint>
#include <string>
#include <string_view>

namespace ts {

class Sha256 {
 public:
  Sha256();
  // Adds `bytes` bytes at `data` to the message.
  void update(const void* data, size_t bytes);
  void update(std::string_view text) { update(text.data(), text.size()); }
  // The digest of everything added; the object is spent afterwards (construct a new one).
  std::array<uint8_t, 32> finish();
  // finish() as 64 lowercase hex digits.
  std::string finish_hex();

 private:
  void compress(const uint8_t* block);  // one 64-byte block

  std::array<uint32_t, 8> h_;
  std::array<uint8_t, 64> block_{};
  size_t block_used_ = 0;
  uint64_t total_bytes_ = 0;
};

// SHA-256 of `bytes` bytes at `data`, as 64 lowercase hex digits.
std::string sha256_hex(const void* data, size_t bytes);

// SHA-256 of `count` floats as IEEE-754 binary32 little-endian, in array order (the byte order
// docs/hdf5-schema.md documents for params_sha256; the same digest on any host).
std::string sha256_hex_of_floats(const float* values, int64_t count);

// HMAC-SHA256 of `message` under `key` (RFC 2104; keys longer than the 64-byte block are
// hashed first). Raw 32 bytes, since SigV4 chains them as the next key.
std::array<uint8_t, 32> hmac_sha256(std::string_view key, std::string_view message);
// 64 lowercase hex digits of `bytes` (e.g. an hmac_sha256 result).
std::string hex_of(const std::array<uint8_t, 32>& bytes);

}  // namespace ts
