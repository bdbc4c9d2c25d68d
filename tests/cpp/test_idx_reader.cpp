// Tests for the IDX reader: small raw and gzip files written here, every malformed-file error
// (each must name the file), and the real Fashion-MNIST test split when it is installed.
#include <gtest/gtest.h>
#include <unistd.h>
#include <zlib.h>

#include <cstdint>
#include <filesystem>
#include <fstream>
#include <string>
#include <vector>

#include "core/error.h"
#include "data/dataset.h"

namespace fs = std::filesystem;

namespace {

void put_be32(std::vector<uint8_t>& out, uint32_t v) {
  out.push_back(static_cast<uint8_t>(v >> 24));
  out.push_back(static_cast<uint8_t>(v >> 16));
  out.push_back(static_cast<uint8_t>(v >> 8));
  out.push_back(static_cast<uint8_t>(v));
}

std::vector<uint8_t> images_bytes(uint32_t count, uint32_t rows, uint32_t cols,
                                  uint32_t magic = 0x803) {
  std::vector<uint8_t> b;
  put_be32(b, magic);
  put_be32(b, count);
  put_be32(b, rows);
  put_be32(b, cols);
  for (uint32_t i = 0; i < count * rows * cols; ++i) b.push_back(static_cast<uint8_t>(i * 7 + 3));
  return b;
}

std::vector<uint8_t> labels_bytes(uint32_t count, uint32_t magic = 0x801) {
  std::vector<uint8_t> b;
  put_be32(b, magic);
  put_be32(b, count);
  for (uint32_t i = 0; i < count; ++i) b.push_back(static_cast<uint8_t>(i % 10));
  return b;
}

void write_raw(const fs::path& p, const std::vector<uint8_t>& b) {
  std::ofstream f(p, std::ios::binary);
  f.write(reinterpret_cast<const char*>(b.data()), static_cast<std::streamsize>(b.size()));
}

void write_gz(const fs::path& p, const std::vector<uint8_t>& b) {
  gzFile f = gzopen(p.string().c_str(), "wb");
  ASSERT_NE(f, nullptr);
  ASSERT_EQ(gzwrite(f, b.data(), static_cast<unsigned>(b.size())), static_cast<int>(b.size()));
  gzclose(f);
}

class IdxReader : public ::testing::Test {
 protected:
  void SetUp() override {
    dir_ = fs::temp_directory_path() /
           ("ts_idx_" + std::to_string(::getpid()) + "_" +
            ::testing::UnitTest::GetInstance()->current_test_info()->name());
    fs::remove_all(dir_);
    fs::create_directories(dir_);
  }
  void TearDown() override { fs::remove_all(dir_); }

  // Writes a consistent t10k split (count images of 4x3), raw or gzipped.
  void write_split(uint32_t count, bool gz) {
    auto w = gz ? write_gz : write_raw;
    const std::string ext = gz ? ".gz" : "";
    w(dir_ / ("t10k-images-idx3-ubyte" + ext), images_bytes(count, 4, 3));
    w(dir_ / ("t10k-labels-idx1-ubyte" + ext), labels_bytes(count));
  }

  // Expects a RuntimeError whose message names `file` and contains `what`.
  void expect_error(const std::string& file, const std::string& what) {
    try {
      ts::read_idx_dataset(dir_.string(), ts::Split::test, "fashion_mnist");
      FAIL() << "expected an error naming " << file;
    } catch (const ts::RuntimeError& e) {
      std::string msg = e.what();
      EXPECT_NE(msg.find(file), std::string::npos) << msg;
      EXPECT_NE(msg.find(what), std::string::npos) << msg;
    }
  }

  fs::path dir_;
};

void check_small(const ts::Dataset& d, uint32_t count) {
  EXPECT_EQ(d.name, "fashion_mnist");
  EXPECT_EQ(d.count, count);
  EXPECT_EQ(d.sample, (ts::Shape{1, 4, 3}));
  EXPECT_EQ(d.classes, 10);
  ASSERT_EQ(d.pixels.size(), count * 12u);
  ASSERT_EQ(d.labels.size(), count);
  for (uint32_t i = 0; i < count * 12; ++i) EXPECT_EQ(d.pixels[i], static_cast<uint8_t>(i * 7 + 3));
  for (uint32_t i = 0; i < count; ++i) EXPECT_EQ(d.labels[i], static_cast<int32_t>(i % 10));
  ASSERT_EQ(d.mean.size(), 1u);
  EXPECT_FLOAT_EQ(d.mean[0], 0.2860f);
  EXPECT_FLOAT_EQ(d.stddev[0], 0.3530f);
}

}  // namespace

TEST_F(IdxReader, ReadsRawFiles) {
  write_split(13, false);
  check_small(ts::read_idx_dataset(dir_.string(), ts::Split::test, "fashion_mnist"), 13);
}

TEST_F(IdxReader, ReadsGzipFiles) {
  write_split(11, true);
  check_small(ts::read_idx_dataset(dir_.string(), ts::Split::test, "fashion_mnist"), 11);
}

TEST_F(IdxReader, PrefersGzipOverRaw) {
  write_split(5, false);
  write_split(7, true);
  EXPECT_EQ(ts::read_idx_dataset(dir_.string(), ts::Split::test, "fashion_mnist").count, 7);
}

TEST_F(IdxReader, MnistConstants) {
  write_split(3, false);
  auto d = ts::read_idx_dataset(dir_.string(), ts::Split::test, "mnist");
  EXPECT_FLOAT_EQ(d.mean[0], 0.1307f);
  EXPECT_FLOAT_EQ(d.stddev[0], 0.3081f);
}

TEST_F(IdxReader, UnknownNameIsConfigError) {
  write_split(3, false);
  EXPECT_THROW(ts::read_idx_dataset(dir_.string(), ts::Split::test, "kmnist"), ts::ConfigError);
}

TEST_F(IdxReader, MissingFile) {
  write_raw(dir_ / "t10k-labels-idx1-ubyte", labels_bytes(3));
  expect_error("t10k-images-idx3-ubyte", "not found");
  try {
    ts::read_idx_dataset(dir_.string(), ts::Split::test, "fashion_mnist");
  } catch (const ts::RuntimeError& e) {
    EXPECT_NE(std::string(e.what()).find("dataset-fashion-mnist"), std::string::npos) << e.what();
  }
}

TEST_F(IdxReader, MissingDirectory) {
  fs::remove_all(dir_);
  expect_error("t10k-images-idx3-ubyte", "does not exist");
}

TEST_F(IdxReader, TruncatedImagesRaw) {
  write_split(4, false);
  auto b = images_bytes(4, 4, 3);
  b.resize(b.size() - 5);
  write_raw(dir_ / "t10k-images-idx3-ubyte", b);
  expect_error("t10k-images-idx3-ubyte", "truncated");
}

TEST_F(IdxReader, TruncatedLabelsGzip) {
  write_split(4, true);
  auto b = labels_bytes(4);
  b.resize(b.size() - 1);
  write_gz(dir_ / "t10k-labels-idx1-ubyte.gz", b);
  expect_error("t10k-labels-idx1-ubyte.gz", "truncated");
}

TEST_F(IdxReader, TruncatedGzipStream) {
  // A .gz file cut in the middle of its compressed stream.
  write_split(200, true);
  auto p = dir_ / "t10k-images-idx3-ubyte.gz";
  fs::resize_file(p, fs::file_size(p) / 2);
  expect_error("t10k-images-idx3-ubyte.gz", "t10k-images");
}

TEST_F(IdxReader, WrongMagic) {
  write_split(4, false);
  write_raw(dir_ / "t10k-images-idx3-ubyte", images_bytes(4, 4, 3, 0x801));
  expect_error("t10k-images-idx3-ubyte", "wrong magic");
  write_split(4, false);
  write_raw(dir_ / "t10k-labels-idx1-ubyte", labels_bytes(4, 0x803));
  expect_error("t10k-labels-idx1-ubyte", "wrong magic");
}

TEST_F(IdxReader, LabelOutOfRange) {
  write_split(4, false);
  auto b = labels_bytes(4);
  b.back() = 10;
  write_raw(dir_ / "t10k-labels-idx1-ubyte", b);
  expect_error("t10k-labels-idx1-ubyte", "out of range");
}

TEST_F(IdxReader, CountMismatch) {
  write_split(4, false);
  write_raw(dir_ / "t10k-labels-idx1-ubyte", labels_bytes(5));
  expect_error("t10k-labels-idx1-ubyte", "4 images but 5 labels");
}

TEST_F(IdxReader, TrailingBytes) {
  write_split(4, false);
  auto b = images_bytes(4, 4, 3);
  b.push_back(0);
  write_raw(dir_ / "t10k-images-idx3-ubyte", b);
  expect_error("t10k-images-idx3-ubyte", "unexpected bytes");
}

TEST(IdxReaderReal, FashionMnistTestSplit) {
  const std::string root = "/usr/share/datasets/fashion-mnist";
  if (!fs::exists(fs::path(root) / "t10k-images-idx3-ubyte.gz") &&
      !fs::exists(fs::path(root) / "t10k-images-idx3-ubyte"))
    FAIL() << "Fashion-MNIST not installed at " << root
           << " (scripts/setup.sh installs the Debian package dataset-fashion-mnist)";
  auto d = ts::read_idx_dataset(root, ts::Split::test, "fashion_mnist");
  EXPECT_EQ(d.count, 10000);
  EXPECT_EQ(d.sample, (ts::Shape{1, 28, 28}));
  ASSERT_EQ(d.labels.size(), 10000u);
  ASSERT_EQ(d.pixels.size(), 10000u * 784u);
  std::vector<int> per_class(10, 0);
  for (int32_t l : d.labels) {
    ASSERT_GE(l, 0);
    ASSERT_LE(l, 9);
    per_class[static_cast<size_t>(l)]++;
  }
  for (int c : per_class) EXPECT_EQ(c, 1000);  // the test split is balanced
  double mean = 0;
  for (uint8_t p : d.pixels) mean += p / 255.0;
  mean /= static_cast<double>(d.pixels.size());
  EXPECT_NEAR(mean, 0.286, 0.01);
}
