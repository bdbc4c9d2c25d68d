// Tests for the CIFAR-10 sample source on files written here in the binary-batch format:
// record layout, train = 5 batches in order (of different lengths), the nested directory,
// normalisation per channel, bad sizes and bad labels (errors name the file).
#include <gtest/gtest.h>
#include <unistd.h>

#include <cstdint>
#include <filesystem>
#include <fstream>
#include <memory>
#include <string>
#include <vector>

#include "core/error.h"
#include "data/cifar_source.h"
#include "data/posix_storage.h"

namespace fs = std::filesystem;

namespace {

constexpr int kRecord = 3073;
const ts::Normalisation kCifarStats{{0.4914f, 0.4822f, 0.4465f}, {0.2470f, 0.2435f, 0.2616f}};

uint8_t pixel(int record, int i, int file_id) { return static_cast<uint8_t>((record * 31 + i + file_id) % 256); }

// `records` records; record r of file `file_id` has label (r + file_id) % 10 and pixel i equal
// to pixel(r, i, file_id).
std::vector<uint8_t> batch_bytes(int records, int file_id) {
  std::vector<uint8_t> b;
  for (int r = 0; r < records; ++r) {
    b.push_back(static_cast<uint8_t>((r + file_id) % 10));
    for (int i = 0; i < 3072; ++i) b.push_back(pixel(r, i, file_id));
  }
  return b;
}

void write_file(const fs::path& p, const std::vector<uint8_t>& b) {
  std::ofstream f(p, std::ios::binary);
  f.write(reinterpret_cast<const char*>(b.data()), static_cast<std::streamsize>(b.size()));
}

class CifarSource : public ::testing::Test {
 protected:
  void SetUp() override {
    dir_ = fs::temp_directory_path() / ("ts_cifar_" + std::to_string(::getpid()) + "_" +
                                        ::testing::UnitTest::GetInstance()->current_test_info()->name());
    fs::remove_all(dir_);
    fs::create_directories(dir_);
  }
  void TearDown() override { fs::remove_all(dir_); }

  std::unique_ptr<ts::SampleSource> open(ts::Split split, const ts::Normalisation& stats = {}) {
    return ts::open_cifar10_source(storage_, dir_.string(), split, stats);
  }

  void expect_error(ts::Split split, const std::string& file, const std::string& what) {
    try {
      open(split);
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

}  // namespace

TEST_F(CifarSource, ReadsTestBatch) {
  write_file(dir_ / "test_batch.bin", batch_bytes(7, 0));
  auto s = open(ts::Split::test);
  EXPECT_EQ(s->count(), 7);
  EXPECT_EQ(s->spec().sample, (ts::Shape{3, 32, 32}));
  EXPECT_EQ(s->spec().classes, 10);
  std::vector<float> image(3072);
  for (int r = 0; r < 7; ++r) {
    int32_t label = -1;
    s->read(r, image.data(), &label, nullptr);
    EXPECT_EQ(label, r % 10);
    for (int i = 0; i < 3072; ++i)
      ASSERT_EQ(image[static_cast<size_t>(i)], static_cast<float>(pixel(r, i, 0)) / 255.0f) << "record " << r;
  }
  EXPECT_NE(s->describe().find("test_batch.bin"), std::string::npos) << s->describe();
}

TEST_F(CifarSource, NormalisesPerChannel) {
  write_file(dir_ / "test_batch.bin", batch_bytes(2, 0));
  auto s = open(ts::Split::test, kCifarStats);
  std::vector<float> image(3072);
  int32_t label = -1;
  s->read(1, image.data(), &label, nullptr);
  for (int c = 0; c < 3; ++c)
    for (int i = c * 1024; i < c * 1024 + 1024; i += 101)
      EXPECT_FLOAT_EQ(image[static_cast<size_t>(i)],
                      (static_cast<float>(pixel(1, i, 0)) / 255.0f - kCifarStats.mean[static_cast<size_t>(c)]) /
                          kCifarStats.stddev[static_cast<size_t>(c)])
          << "channel " << c;
}

TEST_F(CifarSource, TrainConcatenatesFiveBatchesInOrder) {
  for (int k = 1; k <= 5; ++k)
    write_file(dir_ / ("data_batch_" + std::to_string(k) + ".bin"), batch_bytes(k + 1, k));
  auto s = open(ts::Split::train);
  EXPECT_EQ(s->count(), 2 + 3 + 4 + 5 + 6);
  // Sample j is record r of file k, counting on from the records of the files before it.
  std::vector<float> image(3072);
  int64_t j = 0;
  for (int k = 1; k <= 5; ++k)
    for (int r = 0; r <= k; ++r, ++j) {
      int32_t label = -1;
      s->read(j, image.data(), &label, nullptr);
      EXPECT_EQ(label, (r + k) % 10) << "sample " << j;
      EXPECT_EQ(image[10], static_cast<float>(pixel(r, 10, k)) / 255.0f) << "sample " << j;
    }
}

TEST_F(CifarSource, FindsTarballSubdirectory) {
  fs::create_directories(dir_ / "cifar-10-batches-bin");
  write_file(dir_ / "cifar-10-batches-bin" / "test_batch.bin", batch_bytes(2, 0));
  EXPECT_EQ(open(ts::Split::test)->count(), 2);
}

TEST_F(CifarSource, MissingFile) {
  for (int k = 1; k <= 4; ++k)
    write_file(dir_ / ("data_batch_" + std::to_string(k) + ".bin"), batch_bytes(1, k));
  expect_error(ts::Split::train, "data_batch_5.bin", "not found");
}

TEST_F(CifarSource, MissingDirectory) {
  fs::remove_all(dir_);
  expect_error(ts::Split::test, "test_batch.bin", "does not exist");
}

TEST_F(CifarSource, SizeNotMultipleOfRecord) {
  auto b = batch_bytes(3, 0);
  b.pop_back();
  write_file(dir_ / "test_batch.bin", b);
  expect_error(ts::Split::test, "test_batch.bin", "not a positive multiple");
}

TEST_F(CifarSource, EmptyFile) {
  write_file(dir_ / "test_batch.bin", {});
  expect_error(ts::Split::test, "test_batch.bin", "not a positive multiple");
}

TEST_F(CifarSource, LabelOutOfRangeAtOpen) {
  auto b = batch_bytes(500, 0);  // more records than one checking read holds
  b[static_cast<size_t>(400 * kRecord)] = 10;
  write_file(dir_ / "test_batch.bin", b);
  expect_error(ts::Split::test, "test_batch.bin", "label 10 of record 400");
}
