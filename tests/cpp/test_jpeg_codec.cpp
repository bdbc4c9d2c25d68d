// Tests for the JPEG codec (data/jpeg_codec.h): an encode/decode round trip is close to the
// original (JPEG is lossy: mean absolute error bounded, not zero), grey and RGB, from several
// threads at once; damaged bytes are an error naming where they came from.
#include <gtest/gtest.h>

#include <cmath>
#include <cstdint>
#include <cstdlib>
#include <string>
#include <thread>
#include <vector>

#include "core/error.h"
#include "data/jpeg_codec.h"

namespace {

// A smooth image (JPEG's best case) of w x h x c: a diagonal gradient per channel.
ts::Image8 gradient(int w, int h, int c) {
  ts::Image8 im{w, h, c, std::vector<uint8_t>(static_cast<size_t>(w) * h * c)};
  for (int y = 0; y < h; ++y)
    for (int x = 0; x < w; ++x)
      for (int k = 0; k < c; ++k)
        im.pixels[(static_cast<size_t>(y) * w + x) * c + k] = static_cast<uint8_t>((x * 2 + y * 3 + k * 40) % 256 / 2);
  return im;
}

double mean_abs_error(const ts::Image8& a, const ts::Image8& b) {
  double sum = 0;
  for (size_t i = 0; i < a.pixels.size(); ++i) sum += std::abs(int(a.pixels[i]) - int(b.pixels[i]));
  return sum / static_cast<double>(a.pixels.size());
}

std::string error_of(const std::vector<uint8_t>& bytes) {
  try {
    ts::decode_jpeg(bytes.data(), bytes.size(), 3, "shard-00001.rec record 7");
  } catch (const ts::RuntimeError& e) {
    return e.what();
  }
  return "";
}

TEST(JpegCodec, RoundTripIsClose) {
  for (int channels : {1, 3}) {
    const ts::Image8 original = gradient(61, 47, channels);
    const std::vector<uint8_t> jpeg = ts::encode_jpeg(original, 95);
    ASSERT_GT(jpeg.size(), 100u);
    const ts::JpegSize size = ts::jpeg_size(jpeg.data(), jpeg.size(), "mem");
    EXPECT_EQ(size.width, 61);
    EXPECT_EQ(size.height, 47);
    const ts::Image8 decoded = ts::decode_jpeg(jpeg.data(), jpeg.size(), channels, "mem");
    ASSERT_EQ(decoded.pixels.size(), original.pixels.size());
    EXPECT_LT(mean_abs_error(original, decoded), 3.0) << channels << " channel(s)";
  }
}

TEST(JpegCodec, DecodesRgbAsGreyAndBack) {
  const std::vector<uint8_t> jpeg = ts::encode_jpeg(gradient(32, 32, 3), 90);
  const ts::Image8 grey = ts::decode_jpeg(jpeg.data(), jpeg.size(), 1, "mem");
  EXPECT_EQ(grey.channels, 1);
  EXPECT_EQ(grey.pixels.size(), 32u * 32u);
}

TEST(JpegCodec, ThreadsDecodeAtOnce) {
  const ts::Image8 original = gradient(64, 48, 3);
  const std::vector<uint8_t> jpeg = ts::encode_jpeg(original, 90);
  const std::vector<uint8_t> expected = ts::decode_jpeg(jpeg.data(), jpeg.size(), 3, "mem").pixels;
  std::vector<int> wrong(4, 0);
  std::vector<std::thread> threads;
  for (int t = 0; t < 4; ++t)
    threads.emplace_back([&, t] {
      for (int i = 0; i < 50; ++i)
        if (ts::decode_jpeg(jpeg.data(), jpeg.size(), 3, "mem").pixels != expected) ++wrong[t];
    });
  for (auto& t : threads) t.join();
  EXPECT_EQ(wrong, (std::vector<int>{0, 0, 0, 0}));
}

TEST(JpegCodec, DamagedBytesNameTheirPlace) {
  std::vector<uint8_t> jpeg = ts::encode_jpeg(gradient(64, 64, 3), 90);
  std::vector<uint8_t> truncated(jpeg.begin(), jpeg.begin() + static_cast<long>(jpeg.size() / 2));
  const std::string msg = error_of(truncated);
  EXPECT_NE(msg.find("shard-00001.rec record 7"), std::string::npos) << msg;
  EXPECT_NE(error_of(std::vector<uint8_t>(200, 0x41)).find("not a JPEG"), std::string::npos);
  EXPECT_NE(error_of({}).find("record 7"), std::string::npos);
}

TEST(JpegCodec, RefusesBadImagesAndQualities) {
  ts::Image8 bad = gradient(8, 8, 3);
  bad.pixels.pop_back();
  EXPECT_THROW(ts::encode_jpeg(bad, 90), ts::RuntimeError);
  EXPECT_THROW(ts::encode_jpeg(gradient(8, 8, 3), 0), ts::RuntimeError);
  EXPECT_THROW(ts::encode_jpeg(gradient(8, 8, 2), 90), ts::RuntimeError);
}

}  // namespace

// libjpeg-turbo 2.1 leaves a handle whose header read failed mid-file unusable ("Invalid
// argument" on every later decode in that thread); the codec replaces it after an error.
TEST(JpegCodec, DecodesAgainAfterADamagedJpeg) {
  const std::vector<uint8_t> good = ts::encode_jpeg(gradient(8, 8, 1), 95);
  std::vector<uint8_t> cut = ts::encode_jpeg(gradient(64, 64, 3), 90);
  cut.resize(cut.size() / 2);  // the header read fails: "missing SOS marker"
  for (const auto& bad : {cut, std::vector<uint8_t>(300, 0x5a)}) {
    EXPECT_THROW(ts::decode_jpeg(bad.data(), bad.size(), 1, "bad"), ts::RuntimeError);
    EXPECT_EQ(ts::decode_jpeg(good.data(), good.size(), 1, "good").pixels.size(), 64u);
  }
}

// A header claiming 60000x60000 (3.6 G pixels) from a few hundred bytes is refused before any
// allocation, naming the file.
TEST(JpegCodec, RefusesAHeaderClaimingTooManyPixels) {
  std::vector<uint8_t> jpeg = ts::encode_jpeg(gradient(16, 16, 1), 90);
  size_t sof = 0;
  for (size_t i = 0; i + 8 < jpeg.size(); ++i)
    if (jpeg[i] == 0xff && jpeg[i + 1] == 0xc0) sof = i;
  ASSERT_GT(sof, 0u) << "no baseline SOF0 marker";
  for (size_t k : {sof + 5, sof + 7}) {  // height, width: big-endian 16-bit
    jpeg[k] = 60000 >> 8;
    jpeg[k + 1] = 60000 & 0xff;
  }
  EXPECT_EQ(ts::jpeg_size(jpeg.data(), jpeg.size(), "bomb.jpg").width, 60000);
  try {
    ts::decode_jpeg(jpeg.data(), jpeg.size(), 1, "bomb.jpg");
    ADD_FAILURE() << "decoded";
  } catch (const ts::RuntimeError& e) {
    EXPECT_NE(std::string(e.what()).find("bomb.jpg: the JPEG header claims 60000x60000"), std::string::npos) << e.what();
  }
}
