// Tests for the CIFAR-10 binary-batch reader on files written here in that format:
// record layout, train = 5 batches in order, nested directory, bad sizes and bad labels.
#include <gtest/gtest.h>
#include <unistd.h>

#include <cstdint>
#include <filesystem>
#include <fstream>
#include <string>
#include <vector>

#include "core/error.h"
#include "data/dataset.h"

namespace fs = std::filesystem;

namespace {

constexpr int kRecord = 3073;

// `records` records; record r of file `file_id` has label (r + file_id) % 10 and pixel i equal
// to (r * 31 + i + file_id) % 256.
std::vector<uint8_t> batch_bytes(int records, int file_id) {
  std::vector<uint8_t> b;
  for (int r = 0; r < records; ++r) {
    b.push_back(static_cast<uint8_t>((r + file_id) % 10));
    for (int i = 0; i < 3072; ++i) b.push_back(static_cast<uint8_t>((r * 31 + i + file_id) % 256));
  }
  return b;
}

void write_file(const fs::path& p, const std::vector<uint8_t>& b) {
  std::ofstream f(p, std::ios::binary);
  f.write(reinterpret_cast<const char*>(b.data()), static_cast<std::streamsize>(b.size()));
}

class CifarReader : public ::testing::Test {
 protected:
  void SetUp() override {
    dir_ = fs::temp_directory_path() /
           ("ts_cifar_" + std::to_string(::getpid()) + "_" +
            ::testing::UnitTest::GetInstance()->current_test_info()->name());
    fs::remove_all(dir_);
    fs::create_directories(dir_);
  }
  void TearDown() override { fs::remove_all(dir_); }

  void expect_error(ts::Split split, const std::string& file, const std::string& what) {
    try {
      ts::read_cifar10_dataset(dir_.string(), split);
      FAIL() << "expected an error naming " << file;
    } catch (const ts::RuntimeError& e) {
      std::string msg = e.what();
      EXPECT_NE(msg.find(file), std::string::npos) << msg;
      EXPECT_NE(msg.find(what), std::string::npos) << msg;
    }
  }

  fs::path dir_;
};

}  // namespace

TEST_F(CifarReader, ReadsTestBatch) {
  write_file(dir_ / "test_batch.bin", batch_bytes(7, 0));
  auto d = ts::read_cifar10_dataset(dir_.string(), ts::Split::test);
  EXPECT_EQ(d.name, "cifar10");
  EXPECT_EQ(d.count, 7);
  EXPECT_EQ(d.sample, (ts::Shape{3, 32, 32}));
  EXPECT_EQ(d.classes, 10);
  ASSERT_EQ(d.pixels.size(), 7u * 3072u);
  for (int r = 0; r < 7; ++r) {
    EXPECT_EQ(d.labels[static_cast<size_t>(r)], r % 10);
    for (int i = 0; i < 3072; i += 97)
      EXPECT_EQ(d.pixels[static_cast<size_t>(r * 3072 + i)], static_cast<uint8_t>((r * 31 + i) % 256));
  }
  ASSERT_EQ(d.mean.size(), 3u);
  ASSERT_EQ(d.stddev.size(), 3u);
  EXPECT_FLOAT_EQ(d.mean[0], 0.4914f);
  EXPECT_FLOAT_EQ(d.mean[2], 0.4465f);
  EXPECT_FLOAT_EQ(d.stddev[1], 0.2435f);
}

TEST_F(CifarReader, TrainConcatenatesFiveBatchesInOrder) {
  for (int k = 1; k <= 5; ++k)
    write_file(dir_ / ("data_batch_" + std::to_string(k) + ".bin"), batch_bytes(k + 1, k));
  auto d = ts::read_cifar10_dataset(dir_.string(), ts::Split::train);
  EXPECT_EQ(d.count, 2 + 3 + 4 + 5 + 6);
  // First record of batch 3 follows the 2 + 3 records of batches 1 and 2.
  EXPECT_EQ(d.labels[5], 3);
  EXPECT_EQ(d.pixels[5 * 3072 + 10], static_cast<uint8_t>(10 + 3));
}

TEST_F(CifarReader, FindsTarballSubdirectory) {
  fs::create_directories(dir_ / "cifar-10-batches-bin");
  write_file(dir_ / "cifar-10-batches-bin" / "test_batch.bin", batch_bytes(2, 0));
  EXPECT_EQ(ts::read_cifar10_dataset(dir_.string(), ts::Split::test).count, 2);
}

TEST_F(CifarReader, MissingFile) {
  for (int k = 1; k <= 4; ++k)
    write_file(dir_ / ("data_batch_" + std::to_string(k) + ".bin"), batch_bytes(1, k));
  expect_error(ts::Split::train, "data_batch_5.bin", "not found");
}

TEST_F(CifarReader, SizeNotMultipleOfRecord) {
  auto b = batch_bytes(3, 0);
  b.pop_back();
  write_file(dir_ / "test_batch.bin", b);
  expect_error(ts::Split::test, "test_batch.bin", "not a positive multiple");
}

TEST_F(CifarReader, EmptyFile) {
  write_file(dir_ / "test_batch.bin", {});
  expect_error(ts::Split::test, "test_batch.bin", "not a positive multiple");
}

TEST_F(CifarReader, LabelOutOfRange) {
  auto b = batch_bytes(3, 0);
  b[2 * kRecord] = 10;
  write_file(dir_ / "test_batch.bin", b);
  expect_error(ts::Split::test, "test_batch.bin", "label 10 of record 2");
}
