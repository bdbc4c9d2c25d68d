// The records and hdf5 formats against idx (docs/data.md): the real Fashion-MNIST, both splits,
// written by the converters' writers and opened through the data-set registry, returns the
// same normalised floats (bit for bit) and labels for every index as the idx files; the hdf5
// source also from several threads in a shuffled order (its chunk cache). Skips (with the
// reason) where Fashion-MNIST is not installed.
#include <gtest/gtest.h>
#include <unistd.h>

#include <algorithm>
#include <cstring>
#include <filesystem>
#include <numeric>
#include <random>
#include <thread>

#include "data/datasets.h"
#include "data/hdf5_source.h"
#include "data/hdf5_writer.h"
#include "data/records_writer.h"

namespace fs = std::filesystem;

namespace {

const char* kFashion = "/usr/share/datasets/fashion-mnist";

// Compares every sample of `a` and `b` bit for bit; returns the first index that differs, or -1.
int64_t first_difference(const ts::SampleSource& a, const ts::SampleSource& b) {
  const size_t n = static_cast<size_t>(a.spec().sample.numel());
  std::vector<float> x(n), y(n);
  for (int64_t i = 0; i < a.count(); ++i) {
    int32_t la = -1, lb = -2;
    a.read(i, x.data(), &la, nullptr);
    b.read(i, y.data(), &lb, nullptr);
    if (la != lb || std::memcmp(x.data(), y.data(), n * sizeof(float)) != 0) return i;
  }
  return -1;
}

class FormatEquivalence : public ::testing::Test {
 protected:
  static void SetUpTestSuite() {
    if (!fs::exists(fs::path(kFashion) / "train-images-idx3-ubyte.gz")) return;
    dir_ = fs::temp_directory_path() / ("ts_test_format_equivalence_" + std::to_string(::getpid()));
    fs::remove_all(dir_);
    fs::create_directories(dir_ / "records");
    ts::DataOptions idx;
    idx.root = kFashion;
    ts::Hdf5WriteOptions h5;
    h5.compression = "gzip";
    h5.chunk_samples = 100;
    ts::RecordsWriteOptions rec;
    rec.shards = 3;
    for (ts::Split split : {ts::Split::train, ts::Split::test}) {
      auto source = ts::open_split(idx, split);
      ts::write_records_split((dir_ / "records").string(), split, *source, source->count(), rec);
      ts::write_hdf5_split((dir_ / (split == ts::Split::train ? "train.h5" : "test.h5")).string(), *source,
                           source->count(), h5);
    }
  }
  static void TearDownTestSuite() {
    if (!dir_.empty()) fs::remove_all(dir_);
  }
  void SetUp() override {
    if (dir_.empty()) GTEST_SKIP() << "Fashion-MNIST is not installed in " << kFashion << " (scripts/setup.sh)";
  }
  static std::unique_ptr<ts::SampleSource> open(const std::string& format, ts::Split split) {
    ts::DataOptions o;
    o.format = format;
    o.root = format == "idx" ? std::string(kFashion) : format == "records" ? (dir_ / "records").string() : dir_.string();
    return ts::open_split(o, split);
  }
  static fs::path dir_;
};

fs::path FormatEquivalence::dir_;

}  // namespace

TEST_F(FormatEquivalence, RecordsAndHdf5ReturnTheIdxSamplesBitForBit) {
  for (ts::Split split : {ts::Split::train, ts::Split::test}) {
    auto idx = open("idx", split);
    for (const std::string& format : {"records", "hdf5"}) {
      auto other = open(format, split);
      ASSERT_EQ(other->count(), idx->count()) << format;
      EXPECT_EQ(other->spec().sample, idx->spec().sample);
      EXPECT_EQ(other->spec().classes, idx->spec().classes);
      EXPECT_EQ(first_difference(*idx, *other), -1) << format << " differs from idx (first index shown)";
    }
  }
}

TEST_F(FormatEquivalence, Hdf5FromThreadsInShuffledOrder) {
  auto idx = open("idx", ts::Split::test);
  auto h5 = open("hdf5", ts::Split::test);
  EXPECT_NE(h5->describe().find("chunks of 100 samples, gzip"), std::string::npos) << h5->describe();
  std::vector<int64_t> order(static_cast<size_t>(h5->count()));
  std::iota(order.begin(), order.end(), int64_t{0});
  std::shuffle(order.begin(), order.end(), std::mt19937_64(5));
  std::vector<int64_t> mismatches(4, 0);
  std::vector<std::thread> threads;
  for (int t = 0; t < 4; ++t)
    threads.emplace_back([&, t] {
      std::vector<float> a(784), b(784);
      for (size_t k = static_cast<size_t>(t); k < order.size(); k += 4) {
        int32_t la = 0, lb = 0;
        idx->read(order[k], a.data(), &la, nullptr);
        h5->read(order[k], b.data(), &lb, nullptr);
        mismatches[static_cast<size_t>(t)] += la != lb || a != b;
      }
    });
  for (auto& th : threads) th.join();
  EXPECT_EQ(mismatches, std::vector<int64_t>(4, 0));
}
