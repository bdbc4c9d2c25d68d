// core/sha256: the FIPS 180-4 / NIST known answers (empty, "abc", the two-block messages, a
// million 'a' fed in uneven pieces), the documented byte order of sha256_hex_of_floats, and
// HMAC-SHA256 against the RFC 4231 test cases.
#include <gtest/gtest.h>

#include <algorithm>
#include <string>
#include <vector>

#include "core/sha256.h"

using namespace ts;

TEST(Sha256, KnownAnswers) {
  EXPECT_EQ(sha256_hex("", 0), "e3b0c44298fc1c149afbf4c8996fb92427ae41e4649b934ca495991b7852b855");
  EXPECT_EQ(sha256_hex("abc", 3), "ba7816bf8f01cfea414140de5dae2223b00361a396177a9cb410ff61f20015ad");
  const std::string two_blocks = "abcdbcdecdefdefgefghfghighijhijkijkljklmklmnlmnomnopnopq";
  EXPECT_EQ(sha256_hex(two_blocks.data(), two_blocks.size()),
            "248d6a61d20638b8e5c026930c3e6039a33ce45964ff2167f6ecedd419db06c1");
  const std::string long_message =
      "abcdefghbcdefghicdefghijdefghijkefghijklfghijklmghijklmnhijklmnoijklmnopjklmnopqklmnopqrlmnopqrsmnopqrstnopqrstu";
  EXPECT_EQ(sha256_hex(long_message.data(), long_message.size()),
            "cf5b16a778af8380036ce59e7b0492370b249b11e8f07a51afac45037afee9d1");
}

TEST(Sha256, AMillionAsInUnevenPieces) {
  Sha256 sha;
  const std::string piece(997, 'a');  // pieces that straddle the 64-byte blocks
  size_t fed = 0;
  while (fed < 1000000) {
    const size_t n = std::min(piece.size(), 1000000 - fed);
    sha.update(piece.data(), n);
    fed += n;
  }
  EXPECT_EQ(sha.finish_hex(), "cdc76e5c9914fb9281a1c7e284d73e67f1809a48a497200e046d39ccc7112cd0");
}

TEST(Sha256, FloatsAreHashedAsLittleEndianBinary32) {
  // 1.0f = 0x3f800000 -> bytes 00 00 80 3f; -2.5f = 0xc0200000 -> 00 00 20 c0.
  const std::vector<float> values = {1.0f, -2.5f};
  const unsigned char bytes[] = {0x00, 0x00, 0x80, 0x3f, 0x00, 0x00, 0x20, 0xc0};
  EXPECT_EQ(sha256_hex_of_floats(values.data(), 2), sha256_hex(bytes, sizeof bytes));
  EXPECT_EQ(sha256_hex_of_floats(nullptr, 0), sha256_hex("", 0));
}

// RFC 4231 section 4: test cases 1 (short key), 2 (a text key), 3 (50 bytes of 0xdd) and 6 (a
// 131-byte key, hashed first).
TEST(HmacSha256, Rfc4231TestCases) {
  EXPECT_EQ(hex_of(hmac_sha256(std::string(20, '\x0b'), "Hi There")),
            "b0344c61d8db38535ca8afceaf0bf12b881dc200c9833da726e9376c2e32cff7");
  EXPECT_EQ(hex_of(hmac_sha256("Jefe", "what do ya want for nothing?")),
            "5bdcc146bf60754e6a042426089575c75a003f089d2739839dec58b964ec3843");
  EXPECT_EQ(hex_of(hmac_sha256(std::string(20, '\xaa'), std::string(50, '\xdd'))),
            "773ea91e36800e46854db8ebd09181a72959098b3ef8c122d9635514ced565fe");
  EXPECT_EQ(hex_of(hmac_sha256(std::string(131, '\xaa'), "Test Using Larger Than Block-Size Key - Hash Key First")),
            "60e431591ee0b67f0d8a26aacbf5b77f8e0bc6213728c5140546040f0ee37f54");
}
