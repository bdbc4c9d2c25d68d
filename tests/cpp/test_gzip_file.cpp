// Tests for inflate_gzip: round trips of small and multi-megabyte files (several chunks of
// input and output), concatenated members, and truncated or corrupt streams (errors name the
// file).
#include <gtest/gtest.h>
#include <unistd.h>
#include <zlib.h>

#include <cstdint>
#include <filesystem>
#include <fstream>
#include <string>
#include <vector>

#include "core/error.h"
#include "data/gzip_file.h"
#include "data/posix_storage.h"

namespace fs = std::filesystem;

namespace {

class GzipFile : public ::testing::Test {
 protected:
  void SetUp() override {
    dir_ = fs::temp_directory_path() / ("ts_gzip_" + std::to_string(::getpid()) + "_" +
                                        ::testing::UnitTest::GetInstance()->current_test_info()->name());
    fs::remove_all(dir_);
    fs::create_directories(dir_);
  }
  void TearDown() override { fs::remove_all(dir_); }

  // Appends one gzip member holding `bytes` to the file (zlib's own writer, mode "ab").
  std::string append_gz(const std::string& name, const std::vector<uint8_t>& bytes) {
    const std::string path = (dir_ / name).string();
    gzFile f = gzopen(path.c_str(), "ab");
    EXPECT_NE(f, nullptr);
    if (!bytes.empty()) EXPECT_EQ(gzwrite(f, bytes.data(), static_cast<unsigned>(bytes.size())), static_cast<int>(bytes.size()));
    gzclose(f);
    return path;
  }

  std::vector<uint8_t> inflated(const std::string& path) {
    auto f = ts::inflate_gzip(*storage_.open(path));
    EXPECT_EQ(f->path(), path);
    std::vector<uint8_t> out(static_cast<size_t>(f->size()));
    f->read_at(0, f->size(), out.data());
    return out;
  }

  std::string error_of(const std::string& path) {
    try {
      ts::inflate_gzip(*storage_.open(path));
    } catch (const ts::RuntimeError& e) {
      return e.what();
    }
    ADD_FAILURE() << "expected a RuntimeError for " << path;
    return "";
  }

  fs::path dir_;
  ts::PosixStorage storage_;
};

// Poorly compressible bytes (a linear congruential sequence) so the compressed file spans
// several 1 MiB input chunks.
std::vector<uint8_t> noise(size_t n, uint32_t seed) {
  std::vector<uint8_t> b(n);
  for (auto& x : b) {
    seed = seed * 1664525u + 1013904223u;
    x = static_cast<uint8_t>(seed >> 24);
  }
  return b;
}

}  // namespace

TEST_F(GzipFile, RoundTripsSmallAndLarge) {
  const std::vector<uint8_t> small = {1, 2, 3, 250, 0, 7};
  EXPECT_EQ(inflated(append_gz("small.gz", small)), small);
  const auto large = noise(3u << 20, 17);  // 3 MiB: several input and output windows
  EXPECT_EQ(inflated(append_gz("large.gz", large)), large);
  const std::vector<uint8_t> zeros(5u << 20, 0);  // ~1000:1, so one input chunk inflates to many windows
  EXPECT_EQ(inflated(append_gz("zeros.gz", zeros)), zeros);
  EXPECT_TRUE(inflated(append_gz("empty.gz", {})).empty());
}

TEST_F(GzipFile, ConcatenatedMembers) {
  const auto a = noise(1000, 1), b = noise(70000, 2);
  append_gz("two.gz", a);
  const std::string path = append_gz("two.gz", b);
  auto expected = a;
  expected.insert(expected.end(), b.begin(), b.end());
  EXPECT_EQ(inflated(path), expected);
}

TEST_F(GzipFile, ReadsOutsideTheInflatedBytesNameTheFile) {
  const std::string path = append_gz("small.gz", {1, 2, 3});
  auto f = ts::inflate_gzip(*storage_.open(path));
  uint8_t b[4];
  try {
    f->read_at(1, 4, b);
    FAIL() << "expected a RuntimeError";
  } catch (const ts::RuntimeError& e) {
    EXPECT_NE(std::string(e.what()).find(path), std::string::npos) << e.what();
  }
}

TEST_F(GzipFile, TruncatedStream) {
  const std::string path = append_gz("cut.gz", noise(200000, 3));
  fs::resize_file(path, fs::file_size(path) / 2);
  const std::string msg = error_of(path);
  EXPECT_NE(msg.find(path), std::string::npos) << msg;
  EXPECT_NE(msg.find("truncated"), std::string::npos) << msg;
}

TEST_F(GzipFile, NotGzipAndEmptyFiles) {
  const std::string raw = (dir_ / "raw.gz").string();
  std::ofstream(raw, std::ios::binary) << "this is not gzip data at all";
  std::string msg = error_of(raw);
  EXPECT_NE(msg.find(raw), std::string::npos) << msg;
  EXPECT_NE(msg.find("corrupt"), std::string::npos) << msg;
  const std::string empty = (dir_ / "empty.gz").string();
  std::ofstream(empty, std::ios::binary).close();
  msg = error_of(empty);
  EXPECT_NE(msg.find(empty), std::string::npos) << msg;
  EXPECT_NE(msg.find("truncated"), std::string::npos) << msg;
}

TEST_F(GzipFile, CorruptPayload) {
  const std::string path = append_gz("bad.gz", noise(100000, 4));
  {
    std::fstream f(path, std::ios::binary | std::ios::in | std::ios::out);
    f.seekp(5000);
    const char garbage[64] = {};
    f.write(garbage, sizeof garbage);  // zeros in the middle of the deflate stream
  }
  const std::string msg = error_of(path);
  EXPECT_NE(msg.find(path), std::string::npos) << msg;
  EXPECT_NE(msg.find("corrupt"), std::string::npos) << msg;
}

TEST(GzipPath, Suffix) {
  EXPECT_TRUE(ts::is_gzip_path("/d/train-images-idx3-ubyte.gz"));
  EXPECT_FALSE(ts::is_gzip_path("/d/train-images-idx3-ubyte"));
  EXPECT_FALSE(ts::is_gzip_path("gz"));
}
