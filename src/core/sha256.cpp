// SHA-256 (see sha256.h), after FIPS 180-4 section 6.2.
#include "core/sha256.h"

#include <algorithm>
#include <bit>
#include <cstring>
#include <vector>

namespace ts {
namespace {

constexpr std::array<uint32_t, 64> kRoundConstants = {
    0x428a2f98, 0x71374491, 0xb5c0fbcf, 0xe9b5dba5, 0x3956c25b, 0x59f111f1, 0x923f82a4, 0xab1c5ed5,
    0xd807aa98, 0x12835b01, 0x243185be, 0x550c7dc3, 0x72be5d74, 0x80deb1fe, 0x9bdc06a7, 0xc19bf174,
    0xe49b69c1, 0xefbe4786, 0x0fc19dc6, 0x240ca1cc, 0x2de92c6f, 0x4a7484aa, 0x5cb0a9dc, 0x76f988da,
    0x983e5152, 0xa831c66d, 0xb00327c8, 0xbf597fc7, 0xc6e00bf3, 0xd5a79147, 0x06ca6351, 0x14292967,
    0x27b70a85, 0x2e1b2138, 0x4d2c6dfc, 0x53380d13, 0x650a7354, 0x766a0abb, 0x81c2c92e, 0x92722c85,
    0xa2bfe8a1, 0xa81a664b, 0xc24b8b70, 0xc76c51a3, 0xd192e819, 0xd6990624, 0xf40e3585, 0x106aa070,
    0x19a4c116, 0x1e376c08, 0x2748774c, 0x34b0bcb5, 0x391c0cb3, 0x4ed8aa4a, 0x5b9cca4f, 0x682e6ff3,
    0x748f82ee, 0x78a5636f, 0x84c87814, 0x8cc70208, 0x90befffa, 0xa4506ceb, 0xbef9a3f7, 0xc67178f2};

uint32_t rotr(uint32_t x, int n) { return std::rotr(x, n); }

}  // namespace

Sha256::Sha256()
    : h_{0x6a09e667, 0xbb67ae85, 0x3c6ef372, 0xa54ff53a, 0x510e527f, 0x9b05688c, 0x1f83d9ab, 0x5be0cd19} {}

void Sha256::compress(const uint8_t* p) {
  std::array<uint32_t, 64> w;
  for (int t = 0; t < 16; ++t)
    w[t] = (uint32_t{p[4 * t]} << 24) | (uint32_t{p[4 * t + 1]} << 16) | (uint32_t{p[4 * t + 2]} << 8) | p[4 * t + 3];
  for (int t = 16; t < 64; ++t) {
    const uint32_t s0 = rotr(w[t - 15], 7) ^ rotr(w[t - 15], 18) ^ (w[t - 15] >> 3);
    const uint32_t s1 = rotr(w[t - 2], 17) ^ rotr(w[t - 2], 19) ^ (w[t - 2] >> 10);
    w[t] = w[t - 16] + s0 + w[t - 7] + s1;
  }
  uint32_t a = h_[0], b = h_[1], c = h_[2], d = h_[3], e = h_[4], f = h_[5], g = h_[6], h = h_[7];
  for (int t = 0; t < 64; ++t) {
    const uint32_t t1 = h + (rotr(e, 6) ^ rotr(e, 11) ^ rotr(e, 25)) + ((e & f) ^ (~e & g)) + kRoundConstants[t] + w[t];
    const uint32_t t2 = (rotr(a, 2) ^ rotr(a, 13) ^ rotr(a, 22)) + ((a & b) ^ (a & c) ^ (b & c));
    h = g;
    g = f;
    f = e;
    e = d + t1;
    d = c;
    c = b;
    b = a;
    a = t1 + t2;
  }
  h_[0] += a, h_[1] += b, h_[2] += c, h_[3] += d, h_[4] += e, h_[5] += f, h_[6] += g, h_[7] += h;
}

void Sha256::update(const void* data, size_t bytes) {
  const auto* p = static_cast<const uint8_t*>(data);
  total_bytes_ += bytes;
  while (bytes > 0) {
    const size_t take = std::min(bytes, block_.size() - block_used_);
    std::memcpy(block_.data() + block_used_, p, take);
    block_used_ += take;
    p += take;
    bytes -= take;
    if (block_used_ == block_.size()) {
      compress(block_.data());
      block_used_ = 0;
    }
  }
}

std::array<uint8_t, 32> Sha256::finish() {
  // Padding: 0x80, zeros up to 56 bytes mod 64, then the message length in bits, big-endian.
  const uint64_t bits = total_bytes_ * 8;
  const uint8_t one = 0x80, zero = 0;
  update(&one, 1);
  while (block_used_ != 56) update(&zero, 1);
  uint8_t length[8];
  for (int i = 0; i < 8; ++i) length[i] = static_cast<uint8_t>(bits >> (56 - 8 * i));
  update(length, 8);
  std::array<uint8_t, 32> digest;
  for (int i = 0; i < 8; ++i)
    for (int k = 0; k < 4; ++k) digest[4 * i + k] = static_cast<uint8_t>(h_[i] >> (24 - 8 * k));
  return digest;
}

std::string Sha256::finish_hex() {
  static const char* const kHex = "0123456789abcdef";
  std::string out;
  for (uint8_t byte : finish()) {
    out += kHex[byte >> 4];
    out += kHex[byte & 15];
  }
  return out;
}

std::string sha256_hex(const void* data, size_t bytes) {
  Sha256 sha;
  sha.update(data, bytes);
  return sha.finish_hex();
}

std::string sha256_hex_of_floats(const float* values, int64_t count) {
  Sha256 sha;
  if constexpr (std::endian::native == std::endian::little) {
    sha.update(values, static_cast<size_t>(count) * sizeof(float));
  } else {  // byte-swap each value into little-endian order, a block at a time
    std::vector<uint32_t> block;
    for (int64_t i = 0; i < count; i += 4096) {
      const int64_t n = std::min<int64_t>(4096, count - i);
      block.resize(static_cast<size_t>(n));
      std::memcpy(block.data(), values + i, static_cast<size_t>(n) * sizeof(float));
      for (auto& v : block) v = __builtin_bswap32(v);
      sha.update(block.data(), block.size() * sizeof(uint32_t));
    }
  }
  return sha.finish_hex();
}

std::array<uint8_t, 32> hmac_sha256(std::string_view key, std::string_view message) {
  std::array<uint8_t, 64> block{};  // the key, zero-padded to the block size
  if (key.size() > block.size()) {
    Sha256 hashed_key;
    hashed_key.update(key);
    const auto digest = hashed_key.finish();
    std::copy(digest.begin(), digest.end(), block.begin());
  } else {
    std::copy(key.begin(), key.end(), block.begin());
  }
  std::array<uint8_t, 64> inner_pad, outer_pad;
  for (size_t i = 0; i < block.size(); ++i) {
    inner_pad[i] = static_cast<uint8_t>(block[i] ^ 0x36);
    outer_pad[i] = static_cast<uint8_t>(block[i] ^ 0x5c);
  }
  Sha256 inner;
  inner.update(inner_pad.data(), inner_pad.size());
  inner.update(message);
  const auto inner_digest = inner.finish();
  Sha256 outer;
  outer.update(outer_pad.data(), outer_pad.size());
  outer.update(inner_digest.data(), inner_digest.size());
  return outer.finish();
}

std::string hex_of(const std::array<uint8_t, 32>& bytes) {
  static const char* const kHex = "0123456789abcdef";
  std::string out;
  for (uint8_t byte : bytes) {
    out += kHex[byte >> 4];
    out += kHex[byte & 15];
  }
  return out;
}

}  // namespace ts
