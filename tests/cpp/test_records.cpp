// Tests for the records format: CRC-32C against the RFC 3720 check values, a TFRecord frame
// checked byte for byte against one computed by an independent bitwise CRC (Python, by hand),
// sample payloads (raw and JPEG), index files and shard names, and the writer and reader
// together over a small in-memory source (with and without index, damaged on purpose); the
// shuffle-buffer order and the loader reading it.
#include <gtest/gtest.h>
#include <unistd.h>

#include <algorithm>
#include <cmath>
#include <cstdint>
#include <numeric>
#include <filesystem>
#include <fstream>
#include <string>
#include <thread>
#include <vector>

#include "core/error.h"
#include "data/crc32c.h"
#include "data/jpeg_codec.h"
#include "data/loader.h"
#include "data/posix_storage.h"
#include "data/records_format.h"
#include "data/records_source.h"
#include "data/records_writer.h"

namespace fs = std::filesystem;

namespace {

// Samples with pixels (i * 31 + p) % 256 and label i % 10, of shape (C,H,W).
class PatternSource final : public ts::SampleSource {
 public:
  PatternSource(ts::Shape chw, int64_t count) : spec_{chw, 10, 0}, count_(count) {}
  const ts::SampleSpec& spec() const override { return spec_; }
  int64_t count() const override { return count_; }
  std::string describe() const override { return "pattern"; }
  void read(int64_t, float*, int32_t*, float*) const override {}
  void read_pixels(int64_t index, uint8_t* pixels, int32_t* label) const override {
    for (int64_t p = 0; p < spec_.sample.numel(); ++p) pixels[p] = static_cast<uint8_t>((index * 31 + p) % 256);
    *label = static_cast<int32_t>(index % 10);
  }

 private:
  ts::SampleSpec spec_;
  int64_t count_;
};

std::vector<uint8_t> bytes_of(const std::string& s) { return {s.begin(), s.end()}; }

fs::path fresh_dir(const std::string& name) {
  const fs::path dir = fs::temp_directory_path() / ("ts_test_records_" + name + "_" + std::to_string(::getpid()));
  fs::remove_all(dir);
  fs::create_directories(dir);
  return dir;
}

std::vector<uint8_t> read_file(const fs::path& p) {
  std::ifstream in(p, std::ios::binary);
  return {std::istreambuf_iterator<char>(in), std::istreambuf_iterator<char>()};
}

void write_file(const fs::path& p, const std::vector<uint8_t>& b) {
  std::ofstream out(p, std::ios::binary | std::ios::trunc);
  out.write(reinterpret_cast<const char*>(b.data()), static_cast<std::streamsize>(b.size()));
}

template <typename F>
std::string error_of(F&& f) {
  try {
    f();
  } catch (const ts::RuntimeError& e) {
    return e.what();
  }
  return "(no error)";
}

}  // namespace

TEST(Crc32c, KnownCheckValues) {
  EXPECT_EQ(ts::crc32c("123456789", 9), 0xE3069283u);
  EXPECT_EQ(ts::crc32c("", 0), 0u);
  const std::vector<uint8_t> zeros(32, 0), ones(32, 0xFF);
  EXPECT_EQ(ts::crc32c(zeros.data(), zeros.size()), 0x8A9136AAu);  // RFC 3720 B.4
  EXPECT_EQ(ts::crc32c(ones.data(), ones.size()), 0x62A8AB43u);
  // Continuing a checksum equals one pass over the whole.
  EXPECT_EQ(ts::crc32c("6789", 4, ts::crc32c("12345", 5)), 0xE3069283u);
  EXPECT_EQ(ts::mask_crc32c(0), 0xa282ead8u);
}

// The fast path (SSE4.2 where the CPU has it) against the table reference: every length 0..200
// at every alignment 0..7, a long buffer, and a checksum continued from a nonzero start.
TEST(Crc32c, FastPathEqualsTheTableReference) {
  std::vector<uint8_t> bytes(100000 + 8);
  uint32_t x = 12345;
  for (uint8_t& b : bytes) b = static_cast<uint8_t>((x = x * 1103515245u + 12345u) >> 24);
  EXPECT_EQ(ts::crc32c_reference("123456789", 9), 0xE3069283u);
  for (size_t offset = 0; offset < 8; ++offset)
    for (size_t n = 0; n <= 200; ++n)
      ASSERT_EQ(ts::crc32c(bytes.data() + offset, n), ts::crc32c_reference(bytes.data() + offset, n))
          << "offset " << offset << ", " << n << " bytes";
  EXPECT_EQ(ts::crc32c(bytes.data() + 3, 100000), ts::crc32c_reference(bytes.data() + 3, 100000));
  EXPECT_EQ(ts::crc32c(bytes.data(), 77, 0xDEADBEEFu), ts::crc32c_reference(bytes.data(), 77, 0xDEADBEEFu));
}

TEST(RecordFrame, MatchesTfrecordFramingByteForByte) {
  // payload "abc": length 3 (LE), masked CRC 0x0e4999b0, "abc", masked CRC 0x21f1576e.
  const std::vector<uint8_t> expected = {0x03, 0, 0, 0, 0, 0, 0, 0, 0xb0, 0x99, 0x49, 0x0e, 'a', 'b', 'c',
                                         0x6e, 0x57, 0xf1, 0x21};
  const std::vector<uint8_t> frame = ts::frame_record(bytes_of("abc"));
  EXPECT_EQ(frame, expected);
  EXPECT_EQ(ts::frame_payload_length(frame.data(), "here"), 3);
  EXPECT_NO_THROW(ts::check_frame(frame.data(), static_cast<int64_t>(frame.size()), "here"));
  std::vector<uint8_t> bad = frame;
  bad[13] ^= 1;
  EXPECT_NE(error_of([&] { ts::check_frame(bad.data(), static_cast<int64_t>(bad.size()), "shard x, record 4"); })
                .find("shard x, record 4: wrong CRC of the payload"),
            std::string::npos);
  bad = frame;
  bad[0] = 4;
  EXPECT_NE(error_of([&] { ts::frame_payload_length(bad.data(), "shard x, record 4"); }).find("wrong CRC of the length"),
            std::string::npos);
}

TEST(RecordPayload, RawAndJpegRoundTrip) {
  const ts::Shape chw{3, 16, 12};
  std::vector<uint8_t> pixels(static_cast<size_t>(chw.numel()));
  for (size_t i = 0; i < pixels.size(); ++i) pixels[i] = static_cast<uint8_t>(i < pixels.size() / 3 ? 200 : 40);
  const auto raw = ts::encode_sample_payload(chw, pixels.data(), 7, ts::PayloadEncoding::raw, 0);
  ASSERT_EQ(raw.size(), static_cast<size_t>(ts::kPayloadHeader + chw.numel()));
  EXPECT_EQ(std::string(raw.begin(), raw.begin() + 4), "TSR1");
  std::vector<uint8_t> back(pixels.size());
  int32_t label = -1;
  ts::decode_sample_payload(raw.data(), static_cast<int64_t>(raw.size()), chw, back.data(), &label, "p");
  EXPECT_EQ(back, pixels);
  EXPECT_EQ(label, 7);
  const auto jpeg = ts::encode_sample_payload(chw, pixels.data(), 3, ts::PayloadEncoding::jpeg, 95);
  ts::decode_sample_payload(jpeg.data(), static_cast<int64_t>(jpeg.size()), chw, back.data(), &label, "p");
  EXPECT_EQ(label, 3);
  EXPECT_EQ(ts::peek_sample_payload(jpeg.data(), static_cast<int64_t>(jpeg.size()), "p").encoding,
            ts::PayloadEncoding::jpeg);
  int max_error = 0;  // lossy, but the planes stay where they were
  for (size_t i = 0; i < pixels.size(); ++i) max_error = std::max(max_error, std::abs(back[i] - pixels[i]));
  EXPECT_LT(max_error, 40);
  EXPECT_NE(error_of([&] {
              ts::decode_sample_payload(raw.data(), static_cast<int64_t>(raw.size()), ts::Shape{1, 16, 12}, back.data(),
                                        &label, "shard s, record 2");
            }).find("shard s, record 2: sample shape (3,16,12) differs"),
            std::string::npos);
}

// A JPEG file's payload holds the file byte for byte with its own size and channels; decoding
// the payload's image gives what decoding the file gives, and a raw payload re-interleaves.
TEST(RecordPayload, JpegFileKeptByteForByteAndImagesDecodeAtTheirSize) {
  for (int channels : {1, 3}) {
    ts::Image8 image{13, 9, channels, std::vector<uint8_t>(static_cast<size_t>(13 * 9 * channels))};
    for (size_t i = 0; i < image.pixels.size(); ++i) image.pixels[i] = static_cast<uint8_t>(i * 7 % 251);
    const std::vector<uint8_t> file = ts::encode_jpeg(image, 90);
    EXPECT_EQ(ts::jpeg_size(file.data(), file.size(), "f").channels, channels);
    const auto payload = ts::encode_jpeg_file_payload(file.data(), file.size(), 4, "f");
    ASSERT_EQ(payload.size(), ts::kPayloadHeader + file.size());
    EXPECT_TRUE(std::equal(file.begin(), file.end(), payload.begin() + ts::kPayloadHeader));
    const ts::PayloadInfo info = ts::peek_sample_payload(payload.data(), static_cast<int64_t>(payload.size()), "p");
    EXPECT_EQ(info.chw, (ts::Shape{channels, 9, 13}));
    int32_t label = -1;
    for (int want : {1, 3}) {  // decoded to the model's channels, as jpeg_dir decodes the file
      const ts::Image8 got = ts::decode_payload_image(payload.data(), static_cast<int64_t>(payload.size()), want,
                                                      &label, "p");
      EXPECT_EQ(got.pixels, ts::decode_jpeg(file.data(), file.size(), want, "f").pixels);
      EXPECT_EQ(label, 4);
    }
  }
  const ts::Shape chw{2, 3, 4};
  std::vector<uint8_t> planes(static_cast<size_t>(chw.numel()));
  std::iota(planes.begin(), planes.end(), uint8_t{0});
  const auto raw = ts::encode_sample_payload(chw, planes.data(), 1, ts::PayloadEncoding::raw, 0);
  int32_t label = -1;
  const ts::Image8 hwc = ts::decode_payload_image(raw.data(), static_cast<int64_t>(raw.size()), 2, &label, "p");
  ASSERT_EQ(hwc.width, 4);
  ASSERT_EQ(hwc.height, 3);
  for (int p = 0; p < 12; ++p)
    for (int c = 0; c < 2; ++c) EXPECT_EQ(hwc.pixels[static_cast<size_t>(p * 2 + c)], planes[static_cast<size_t>(c * 12 + p)]);
  EXPECT_NE(error_of([&] { ts::decode_payload_image(raw.data(), static_cast<int64_t>(raw.size()), 3, &label, "r 9"); })
                .find("r 9: raw image of 2 channels, the model takes 3"),
            std::string::npos);
  const std::vector<uint8_t> not_jpeg(64, 7);
  EXPECT_NE(error_of([&] { ts::encode_jpeg_file_payload(not_jpeg.data(), not_jpeg.size(), 0, "dir/x.jpg"); })
                .find("dir/x.jpg"),
            std::string::npos);
}

TEST(RecordIndex, RoundTripAndRejectsDamage) {
  const std::vector<int64_t> offsets = {0, 40, 100};
  EXPECT_EQ(ts::parse_record_index(ts::encode_record_index(offsets), "i"), offsets);
  auto bytes = ts::encode_record_index(offsets);
  bytes.pop_back();
  EXPECT_NE(error_of([&] { ts::parse_record_index(bytes, "/d/x.rec.idx"); }).find("record index /d/x.rec.idx"),
            std::string::npos);
  EXPECT_THROW(ts::parse_record_index(ts::encode_record_index({0, 40, 30}), "i"), ts::RuntimeError);
  EXPECT_THROW(ts::parse_record_index(ts::encode_record_index({8, 40}), "i"), ts::RuntimeError);
}

TEST(RecordShardNames, FormatAndParse) {
  EXPECT_EQ(ts::record_shard_name("train", 3, 8), "train-00003-of-00008.rec");
  int shard = 0, shards = 0;
  EXPECT_TRUE(ts::parse_record_shard_name("test-00012-of-00100.rec", "test", &shard, &shards));
  EXPECT_EQ(shard, 12);
  EXPECT_EQ(shards, 100);
  EXPECT_FALSE(ts::parse_record_shard_name("test-00012-of-00100.rec", "train", &shard, &shards));
  EXPECT_FALSE(ts::parse_record_shard_name("test-0001x-of-00100.rec", "test", &shard, &shards));
  EXPECT_FALSE(ts::parse_record_shard_name("test-00012-of-00100.rec.idx", "test", &shard, &shards));
}

TEST(RecordsSource, WrittenShardsReadBackWithAndWithoutIndex) {
  const fs::path dir = fresh_dir("roundtrip");
  const PatternSource pattern(ts::Shape{1, 5, 4}, 23);
  ts::RecordsWriteOptions w;
  w.shards = 3;
  for (ts::Split split : {ts::Split::train, ts::Split::test}) ts::write_records_split(dir, split, pattern, 23, w);
  ts::PosixStorage storage;
  for (bool indexed : {true, false}) {
    if (!indexed)
      for (const auto& e : fs::directory_iterator(dir))
        if (e.path().extension() == ".idx") fs::remove(e.path());
    auto source = ts::open_records_source(storage, dir, ts::Split::train, "pattern", 10, {});
    ASSERT_EQ(source->count(), 23);
    EXPECT_TRUE(source->prefers_sequential());
    EXPECT_NE(source->describe().find(indexed ? "indexed" : "header walk"), std::string::npos);
    std::vector<uint8_t> got(20), want(20);
    for (int64_t i = 0; i < 23; ++i) {
      int32_t label = -1, want_label = -2;
      source->read_pixels(i, got.data(), &label);
      pattern.read_pixels(i, want.data(), &want_label);
      EXPECT_EQ(got, want) << i;
      EXPECT_EQ(label, want_label);
    }
    // read(): normalised (empty statistics: p / 255), from several threads at once.
    std::vector<std::thread> threads;
    std::vector<int> bad(4, 0);
    for (int t = 0; t < 4; ++t)
      threads.emplace_back([&, t] {
        std::vector<float> image(20);
        for (int64_t i = t; i < 23; i += 4) {
          int32_t label = 0;
          source->read(i, image.data(), &label, nullptr);
          bad[t] += image[3] != static_cast<float>((i * 31 + 3) % 256) / 255.0f || label != i % 10;
        }
      });
    for (auto& th : threads) th.join();
    EXPECT_EQ(bad, std::vector<int>(4, 0));
  }
  fs::remove_all(dir);
}

TEST(RecordsSource, DamageIsNamedWithFileAndRecord) {
  const fs::path dir = fresh_dir("damage");
  const PatternSource pattern(ts::Shape{1, 5, 4}, 10);
  ts::RecordsWriteOptions w;
  w.shards = 2;
  ts::write_records_split(dir, ts::Split::test, pattern, 10, w);
  ts::PosixStorage storage;
  const fs::path shard = dir / "test-00001-of-00002.rec";
  const int64_t frame = ts::kFrameOverhead + ts::kPayloadHeader + 20;
  auto bytes = read_file(shard);
  bytes[static_cast<size_t>(2 * frame + 30)] ^= 0x10;  // a pixel of record 2
  write_file(shard, bytes);
  auto source = ts::open_records_source(storage, dir, ts::Split::test, "pattern", 10, {});
  std::vector<uint8_t> px(20);
  int32_t label = 0;
  EXPECT_NE(error_of([&] { source->read_pixels(7, px.data(), &label); })
                .find("records shard " + shard.string() + ", record 2: wrong CRC of the payload"),
            std::string::npos);
  // Truncated: with the index, open finds the last frame short; without, the walk does.
  bytes.resize(bytes.size() - 5);
  write_file(shard, bytes);
  EXPECT_NE(error_of([&] { ts::open_records_source(storage, dir, ts::Split::test, "p", 10, {}); })
                .find(shard.string() + ", record 4"),
            std::string::npos);
  // Cut before the last indexed record begins: no negative "bytes before the end".
  const auto cut = bytes;
  bytes.resize(static_cast<size_t>(2 * frame));
  write_file(shard, bytes);
  EXPECT_NE(error_of([&] { ts::open_records_source(storage, dir, ts::Split::test, "p", 10, {}); })
                .find(shard.string() + ", record 4: the index puts it at offset " + std::to_string(4 * frame) +
                      ", but the shard ends at byte " + std::to_string(2 * frame) + ": the shard is truncated"),
            std::string::npos)
      << error_of([&] { ts::open_records_source(storage, dir, ts::Split::test, "p", 10, {}); });
  write_file(shard, cut);
  fs::remove(dir / "test-00001-of-00002.rec.idx");
  EXPECT_NE(error_of([&] { ts::open_records_source(storage, dir, ts::Split::test, "p", 10, {}); })
                .find(shard.string() + ", record 4: truncated"),
            std::string::npos);
  // A missing shard of the set.
  fs::remove(shard);
  EXPECT_NE(error_of([&] { ts::open_records_source(storage, dir, ts::Split::test, "p", 10, {}); })
                .find("holds 1 of the 2 shards"),
            std::string::npos);
  // Labels outside the data set's classes.
  fs::remove_all(dir);
  fs::create_directories(dir);
  w.shards = 1;
  ts::write_records_split(dir, ts::Split::test, pattern, 10, w);
  EXPECT_NE(error_of([&] {
              auto s = ts::open_records_source(storage, dir, ts::Split::test, "p", 3, {});
              s->read_pixels(4, px.data(), &label);
            }).find("record 4: label 4 is out of range 0..2"),
            std::string::npos);
  fs::remove_all(dir);
}

TEST(RecordsShuffleBuffer, OrderIsAPermutationNearTheStream) {
  const std::vector<int64_t> sizes = {40, 25, 35};
  for (int64_t buffer : {1, 8, 1000}) {
    const auto a = ts::shuffle_buffer_order(sizes, buffer, 7, 0);
    EXPECT_EQ(a, ts::shuffle_buffer_order(sizes, buffer, 7, 0));  // deterministic
    std::vector<int64_t> sorted = a;
    std::sort(sorted.begin(), sorted.end());
    std::vector<int64_t> all(100);
    std::iota(all.begin(), all.end(), int64_t{0});
    ASSERT_EQ(sorted, all) << "buffer " << buffer;
    EXPECT_NE(a, ts::shuffle_buffer_order(sizes, buffer, 7, 1));  // another epoch, another order
    // The stream: the shards in some order, each in record order. Position p holds a record among
    // the first p + buffer of it, and a buffer of 1 is the stream itself.
    if (buffer == 1) {
      for (size_t p = 1; p < 100; ++p) {
        const bool same_shard_next = a[p] == a[p - 1] + 1;
        const bool shard_start = a[p] == 0 || a[p] == 40 || a[p] == 65;
        EXPECT_TRUE(same_shard_next || shard_start) << p;
      }
    }
  }
  // Locality with a buffer of 8: derive the stream from the shard order the first records reveal.
  const auto order = ts::shuffle_buffer_order(sizes, 8, 3, 2);
  const auto stream = ts::shuffle_buffer_order(sizes, 1, 3, 2);  // same seed and epoch: same shard order
  std::vector<int64_t> position_in_stream(100);
  for (size_t p = 0; p < 100; ++p) position_in_stream[static_cast<size_t>(stream[p])] = static_cast<int64_t>(p);
  for (size_t p = 0; p < 100; ++p) EXPECT_LT(position_in_stream[static_cast<size_t>(order[p])], static_cast<int64_t>(p) + 8);
}

TEST(RecordsShuffleBuffer, LoaderReadsTheSourcesOrder) {
  const fs::path dir = fresh_dir("shuffle_buffer");
  const PatternSource pattern(ts::Shape{1, 5, 4}, 60);
  ts::RecordsWriteOptions w;
  w.shards = 3;
  ts::write_records_split(dir, ts::Split::train, pattern, 60, w);
  ts::PosixStorage storage;
  auto source = ts::open_records_source(storage, dir, ts::Split::train, "pattern", 10, {}, 6);
  EXPECT_NE(source->describe().find("shuffle buffer of 6 samples"), std::string::npos);
  ts::LoaderOptions o;
  o.batch = 10;
  o.seed = 5;
  o.threads = 2;
  ts::Loader loader(*source, o);
  const auto expected = ts::shuffle_buffer_order({20, 20, 20}, 6, 5, 0);
  for (int step = 0; step < 6; ++step) {
    ts::Batch b;
    ASSERT_TRUE(loader.next(b));
    for (int s = 0; s < 10; ++s) {
      // pixel 0 of sample i is (i * 31) % 256 (/ 255 with empty statistics): i from it.
      const int64_t i = (static_cast<int64_t>(std::lround(b.images[s * 20] * 255.0f)) * 223) % 256;  // 31 * 223 = 1 mod 256
      EXPECT_EQ(i, expected[static_cast<size_t>(step * 10 + s)]) << step << " " << s;
    }
  }
  fs::remove_all(dir);
}
