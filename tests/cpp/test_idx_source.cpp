// Tests for the IDX sample source: small raw and gzip files written here, read back sample by
// sample (pixels, labels, normalisation, from several threads); every malformed-file error
// (each must name the file); and the real Fashion-MNIST test split.
#include <gtest/gtest.h>
#include <unistd.h>
#include <zlib.h>

#include <cstdint>
#include <filesystem>
#include <fstream>
#include <memory>
#include <string>
#include <thread>
#include <vector>

#include "core/error.h"
#include "data/idx_source.h"
#include "data/posix_storage.h"

namespace fs = std::filesystem;

namespace {

const ts::Normalisation kFashionStats{{0.2860f}, {0.3530f}};

void put_be32(std::vector<uint8_t>& out, uint32_t v) {
  for (int shift : {24, 16, 8, 0}) out.push_back(static_cast<uint8_t>(v >> shift));
}

uint8_t pixel(uint32_t i) { return static_cast<uint8_t>(i * 7 + 3); }

std::vector<uint8_t> images_bytes(uint32_t count, uint32_t rows, uint32_t cols, uint32_t magic = 0x803) {
  std::vector<uint8_t> b;
  for (uint32_t v : {magic, count, rows, cols}) put_be32(b, v);
  for (uint32_t i = 0; i < count * rows * cols; ++i) b.push_back(pixel(i));
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

// Every sample of `source`: images (count, sample) and labels (count).
struct AllSamples {
  std::vector<float> images;
  std::vector<int32_t> labels;
};

AllSamples read_all(const ts::SampleSource& source) {
  const int64_t numel = source.spec().sample.numel();
  AllSamples all;
  all.images.resize(static_cast<size_t>(source.count() * numel));
  all.labels.resize(static_cast<size_t>(source.count()));
  for (int64_t i = 0; i < source.count(); ++i)
    source.read(i, all.images.data() + i * numel, all.labels.data() + i, nullptr);
  return all;
}

class IdxSource : public ::testing::Test {
 protected:
  void SetUp() override {
    dir_ = fs::temp_directory_path() / ("ts_idx_" + std::to_string(::getpid()) + "_" +
                                        ::testing::UnitTest::GetInstance()->current_test_info()->name());
    fs::remove_all(dir_);
    fs::create_directories(dir_);
  }
  void TearDown() override { fs::remove_all(dir_); }

  std::unique_ptr<ts::SampleSource> open(const ts::Normalisation& stats = {}) {
    return ts::open_idx_source(storage_, dir_.string(), ts::Split::test, "fashion_mnist", stats);
  }

  // Writes a consistent t10k split (count images of 4x3), raw or gzipped.
  void write_split(uint32_t count, bool gz) {
    auto w = gz ? write_gz : write_raw;
    const std::string ext = gz ? ".gz" : "";
    w(dir_ / ("t10k-images-idx3-ubyte" + ext), images_bytes(count, 4, 3));
    w(dir_ / ("t10k-labels-idx1-ubyte" + ext), labels_bytes(count));
  }

  // Expects a RuntimeError at open whose message names `file` and contains `what`.
  void expect_error(const std::string& file, const std::string& what) {
    try {
      open();
      FAIL() << "expected an error naming " << file;
    } catch (const ts::RuntimeError& e) {
      std::string msg = e.what();
      EXPECT_NE(msg.find(file), std::string::npos) << msg;
      EXPECT_NE(msg.find(what), std::string::npos) << msg;
    }
  }

  fs::path dir_;
  ts::PosixStorage storage_;
};

// Without statistics, read() yields p/255 exactly: the bytes of the file, sample by sample.
void check_small(const ts::SampleSource& s, uint32_t count) {
  EXPECT_EQ(s.count(), count);
  EXPECT_EQ(s.spec().sample, (ts::Shape{1, 4, 3}));
  EXPECT_EQ(s.spec().classes, 10);
  const AllSamples all = read_all(s);
  for (uint32_t i = 0; i < count * 12; ++i) ASSERT_EQ(all.images[i], static_cast<float>(pixel(i)) / 255.0f) << i;
  for (uint32_t i = 0; i < count; ++i) EXPECT_EQ(all.labels[i], static_cast<int32_t>(i % 10));
}

}  // namespace

TEST_F(IdxSource, ReadsRawFiles) {
  write_split(13, false);
  auto s = open();
  check_small(*s, 13);
  EXPECT_NE(s->describe().find((dir_ / "t10k-images-idx3-ubyte").string()), std::string::npos) << s->describe();
}

TEST_F(IdxSource, ReadsGzipFiles) {
  write_split(11, true);
  auto s = open();
  check_small(*s, 11);
  EXPECT_NE(s->describe().find("inflated at open"), std::string::npos) << s->describe();
}

TEST_F(IdxSource, PrefersGzipOverRaw) {
  write_split(5, false);
  write_split(7, true);
  EXPECT_EQ(open()->count(), 7);
}

TEST_F(IdxSource, NormalisesWithTheStatistics) {
  write_split(3, false);
  const AllSamples all = read_all(*open(kFashionStats));
  for (uint32_t i = 0; i < 36; ++i)
    EXPECT_FLOAT_EQ(all.images[i], (static_cast<float>(pixel(i)) / 255.0f - 0.2860f) / 0.3530f);
}

TEST_F(IdxSource, ThreadsReadTheSameSamples) {
  write_split(200, false);
  auto s = open(kFashionStats);
  const AllSamples one = read_all(*s);
  std::vector<AllSamples> per_thread(3);
  std::vector<std::thread> threads;
  for (size_t t = 0; t < per_thread.size(); ++t) threads.emplace_back([&, t] { per_thread[t] = read_all(*s); });
  for (auto& t : threads) t.join();
  for (const auto& other : per_thread) {
    EXPECT_EQ(other.images, one.images);
    EXPECT_EQ(other.labels, one.labels);
  }
}

TEST_F(IdxSource, MissingFile) {
  write_raw(dir_ / "t10k-labels-idx1-ubyte", labels_bytes(3));
  expect_error("t10k-images-idx3-ubyte", "not found");
  expect_error("t10k-images-idx3-ubyte", "dataset-fashion-mnist");
}

TEST_F(IdxSource, MissingDirectory) {
  fs::remove_all(dir_);
  expect_error("t10k-images-idx3-ubyte", "does not exist");
}

TEST_F(IdxSource, TruncatedImagesRaw) {
  write_split(4, false);
  auto b = images_bytes(4, 4, 3);
  b.resize(b.size() - 5);
  write_raw(dir_ / "t10k-images-idx3-ubyte", b);
  expect_error("t10k-images-idx3-ubyte", "truncated");
}

TEST_F(IdxSource, TruncatedHeader) {
  write_split(4, false);
  write_raw(dir_ / "t10k-images-idx3-ubyte", {0, 0, 8, 3, 0, 0});
  expect_error("t10k-images-idx3-ubyte", "truncated");
}

TEST_F(IdxSource, TruncatedLabelsGzip) {
  write_split(4, true);
  auto b = labels_bytes(4);
  b.resize(b.size() - 1);
  write_gz(dir_ / "t10k-labels-idx1-ubyte.gz", b);
  expect_error("t10k-labels-idx1-ubyte.gz", "truncated");
}

TEST_F(IdxSource, TruncatedGzipStream) {
  // A .gz file cut in the middle of its compressed stream.
  write_split(200, true);
  auto p = dir_ / "t10k-images-idx3-ubyte.gz";
  fs::resize_file(p, fs::file_size(p) / 2);
  expect_error("t10k-images-idx3-ubyte.gz", "truncated");
}

TEST_F(IdxSource, WrongMagic) {
  write_split(4, false);
  write_raw(dir_ / "t10k-images-idx3-ubyte", images_bytes(4, 4, 3, 0x801));
  expect_error("t10k-images-idx3-ubyte", "wrong magic");
  write_split(4, false);
  write_raw(dir_ / "t10k-labels-idx1-ubyte", labels_bytes(4, 0x803));
  expect_error("t10k-labels-idx1-ubyte", "wrong magic");
}

TEST_F(IdxSource, ImplausibleDimensions) {
  write_split(4, false);
  write_raw(dir_ / "t10k-images-idx3-ubyte", images_bytes(4, 5000, 1));
  expect_error("t10k-images-idx3-ubyte", "implausible dimensions");
}

TEST_F(IdxSource, LabelOutOfRange) {
  write_split(4, false);
  auto b = labels_bytes(4);
  b.back() = 10;
  write_raw(dir_ / "t10k-labels-idx1-ubyte", b);
  expect_error("t10k-labels-idx1-ubyte", "out of range");
}

TEST_F(IdxSource, LabelChangedAfterOpenFailsTheRead) {
  write_split(4, false);
  auto s = open();
  auto b = labels_bytes(4);
  b[8 + 2] = 12;  // label of sample 2, rewritten in place
  write_raw(dir_ / "t10k-labels-idx1-ubyte", b);
  std::vector<float> image(12);
  int32_t label = -1;
  s->read(1, image.data(), &label, nullptr);
  EXPECT_EQ(label, 1);
  try {
    s->read(2, image.data(), &label, nullptr);
    FAIL() << "expected a RuntimeError";
  } catch (const ts::RuntimeError& e) {
    EXPECT_NE(std::string(e.what()).find("t10k-labels-idx1-ubyte"), std::string::npos) << e.what();
  }
}

TEST_F(IdxSource, CountMismatch) {
  write_split(4, false);
  write_raw(dir_ / "t10k-labels-idx1-ubyte", labels_bytes(5));
  expect_error("t10k-labels-idx1-ubyte", "4 images but 5 labels");
}

TEST_F(IdxSource, TrailingBytes) {
  write_split(4, false);
  auto b = images_bytes(4, 4, 3);
  b.push_back(0);
  write_raw(dir_ / "t10k-images-idx3-ubyte", b);
  expect_error("t10k-images-idx3-ubyte", "unexpected bytes");
}

TEST(IdxSourceReal, FashionMnistTestSplit) {
  const std::string root = "/usr/share/datasets/fashion-mnist";
  if (!fs::exists(fs::path(root) / "t10k-images-idx3-ubyte.gz") &&
      !fs::exists(fs::path(root) / "t10k-images-idx3-ubyte"))
    FAIL() << "Fashion-MNIST not installed at " << root
           << " (scripts/setup.sh installs the Debian package dataset-fashion-mnist)";
  ts::PosixStorage storage;
  auto s = ts::open_idx_source(storage, root, ts::Split::test, "fashion_mnist", {});
  EXPECT_EQ(s->count(), 10000);
  EXPECT_EQ(s->spec().sample, (ts::Shape{1, 28, 28}));
  const AllSamples all = read_all(*s);
  std::vector<int> per_class(10, 0);
  for (int32_t l : all.labels) {
    ASSERT_GE(l, 0);
    ASSERT_LE(l, 9);
    per_class[static_cast<size_t>(l)]++;
  }
  for (int c : per_class) EXPECT_EQ(c, 1000);  // the test split is balanced
  double mean = 0;
  for (float x : all.images) mean += x;  // p/255 without statistics
  mean /= static_cast<double>(all.images.size());
  EXPECT_NEAR(mean, 0.286, 0.01);
}
