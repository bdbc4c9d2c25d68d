// The streaming loader yields exactly the batches of the old in-memory design: a reference
// source here reads whole files into memory up front (IDX through zlib's gzread, CIFAR with
// an ifstream; none of the code under test) and normalises every pixel with the documented
// formula; loaders over it and over the data set opened by open_dataset must give
// byte-identical batches for training (shuffled, 2 ranks, 2 threads) and evaluation passes.
// Run on small fixtures written here (raw IDX, gzip IDX, CIFAR-10) and on the real
// Fashion-MNIST.
#include <gtest/gtest.h>
#include <unistd.h>
#include <zlib.h>

#include <cstdint>
#include <cstring>
#include <filesystem>
#include <fstream>
#include <string>
#include <vector>

#include "data/datasets.h"
#include "data/loader.h"

namespace fs = std::filesystem;

namespace {

// A whole split in memory: pixels (count, sample) uint8, labels (count).
class InMemorySource final : public ts::SampleSource {
 public:
  InMemorySource(ts::Shape sample, std::vector<uint8_t> pixels, std::vector<int32_t> labels, std::vector<float> mean,
                 std::vector<float> stddev)
      : spec_{std::move(sample), 10, 0},
        pixels_(std::move(pixels)),
        labels_(std::move(labels)),
        mean_(std::move(mean)),
        stddev_(std::move(stddev)) {}
  const ts::SampleSpec& spec() const override { return spec_; }
  int64_t count() const override { return static_cast<int64_t>(labels_.size()); }
  std::string describe() const override { return "reference"; }
  void read(int64_t index, float* image, int32_t* label, float*) const override {
    const int64_t numel = spec_.sample.numel(), channels = spec_.sample[0], plane = numel / channels;
    for (int64_t c = 0; c < channels; ++c)
      for (int64_t i = 0; i < plane; ++i) {
        const uint8_t p = pixels_[static_cast<size_t>(index * numel + c * plane + i)];
        image[c * plane + i] = (static_cast<float>(p) / 255.0f - mean_[static_cast<size_t>(c)]) / stddev_[static_cast<size_t>(c)];
      }
    *label = labels_[static_cast<size_t>(index)];
  }

 private:
  ts::SampleSpec spec_;
  std::vector<uint8_t> pixels_;
  std::vector<int32_t> labels_;
  std::vector<float> mean_, stddev_;
};

// The whole file (gzread inflates .gz and passes raw files through).
std::vector<uint8_t> slurp(const std::string& path) {
  gzFile f = gzopen(path.c_str(), "rb");
  EXPECT_NE(f, nullptr) << path;
  std::vector<uint8_t> all, chunk(1 << 16);
  int got;
  while ((got = gzread(f, chunk.data(), static_cast<unsigned>(chunk.size()))) > 0) all.insert(all.end(), chunk.begin(), chunk.begin() + got);
  gzclose(f);
  return all;
}

uint32_t be32(const std::vector<uint8_t>& b, size_t at) {
  return uint32_t{b[at]} << 24 | uint32_t{b[at + 1]} << 16 | uint32_t{b[at + 2]} << 8 | b[at + 3];
}

InMemorySource idx_reference(const std::string& images_path, const std::string& labels_path, float mean, float stddev) {
  const auto images = slurp(images_path), labels = slurp(labels_path);
  const int64_t rows = be32(images, 8), cols = be32(images, 12);
  return InMemorySource(ts::Shape{1, rows, cols}, std::vector<uint8_t>(images.begin() + 16, images.end()),
                        std::vector<int32_t>(labels.begin() + 8, labels.end()), {mean}, {stddev});
}

InMemorySource cifar_reference(const std::vector<std::string>& paths) {
  std::vector<uint8_t> pixels;
  std::vector<int32_t> labels;
  for (const auto& p : paths) {
    std::ifstream in(p, std::ios::binary);
    std::vector<char> rec(3073);
    while (in.read(rec.data(), 3073)) {
      labels.push_back(static_cast<uint8_t>(rec[0]));
      pixels.insert(pixels.end(), rec.begin() + 1, rec.end());
    }
  }
  return InMemorySource(ts::Shape{3, 32, 32}, std::move(pixels), std::move(labels), {0.4914f, 0.4822f, 0.4465f},
                        {0.2470f, 0.2435f, 0.2616f});
}

// Every byte of the next `batches` batches (images, labels, size, epoch).
std::vector<uint8_t> batch_bytes(ts::Loader& loader, int64_t batches, int64_t numel) {
  std::vector<uint8_t> out;
  ts::Batch b;
  for (int64_t k = 0; k < batches && loader.next(b); ++k) {
    const auto* img = reinterpret_cast<const uint8_t*>(b.images);
    const auto* lab = reinterpret_cast<const uint8_t*>(b.labels);
    out.insert(out.end(), img, img + b.size * numel * 4);
    out.insert(out.end(), lab, lab + b.size * 4);
    out.push_back(static_cast<uint8_t>(b.size));
    out.push_back(static_cast<uint8_t>(b.epoch));
  }
  return out;
}

// Training on 2 ranks (shuffled, 2 threads, over more than one epoch when `train_batches`
// allows) and a full evaluation pass on each rank give the same bytes from both sources.
void expect_same_batches(const ts::SampleSource& streamed, const ts::SampleSource& reference, int64_t batch,
                         int64_t train_batches) {
  ASSERT_EQ(streamed.count(), reference.count());
  ASSERT_EQ(streamed.spec().sample, reference.spec().sample);
  const int64_t numel = reference.spec().sample.numel();
  for (int rank = 0; rank < 2; ++rank) {
    const ts::LoaderOptions train{.batch = batch, .seed = 99, .threads = 2, .prefetch = 3, .rank = rank, .world = 2};
    ts::Loader a(streamed, train), b(reference, train);
    const auto got = batch_bytes(a, train_batches, numel);
    EXPECT_FALSE(got.empty());
    EXPECT_TRUE(got == batch_bytes(b, train_batches, numel)) << "training batches of rank " << rank;
    const ts::LoaderOptions eval{.batch = batch, .shuffle = false, .threads = 2, .rank = rank, .world = 2, .drop_last = false};
    ts::Loader c(streamed, eval), d(reference, eval);
    EXPECT_TRUE(batch_bytes(c, 1 << 30, numel) == batch_bytes(d, 1 << 30, numel)) << "evaluation pass of rank " << rank;
  }
}

class StreamingEquivalence : public ::testing::Test {
 protected:
  void SetUp() override {
    dir_ = fs::temp_directory_path() / ("ts_stream_" + std::to_string(::getpid()) + "_" +
                                        ::testing::UnitTest::GetInstance()->current_test_info()->name());
    fs::remove_all(dir_);
    fs::create_directories(dir_);
  }
  void TearDown() override { fs::remove_all(dir_); }

  // A split of `count` 5x6 images with pseudo-random pixels and labels, raw or gzipped.
  void write_idx(const std::string& prefix, uint32_t count, bool gz) {
    std::vector<uint8_t> images = {0, 0, 8, 3}, labels = {0, 0, 8, 1};
    for (int shift : {24, 16, 8, 0}) images.push_back(static_cast<uint8_t>(count >> shift));
    for (uint32_t v : {5u, 6u})
      for (int shift : {24, 16, 8, 0}) images.push_back(static_cast<uint8_t>(v >> shift));
    for (int shift : {24, 16, 8, 0}) labels.push_back(static_cast<uint8_t>(count >> shift));
    uint32_t x = 12345;
    for (uint32_t i = 0; i < count * 30; ++i) images.push_back(static_cast<uint8_t>((x = x * 1103515245u + 12345u) >> 16));
    for (uint32_t i = 0; i < count; ++i) labels.push_back(static_cast<uint8_t>((i * 7) % 10));
    for (auto [name, bytes] : {std::pair{prefix + "-images-idx3-ubyte", &images}, std::pair{prefix + "-labels-idx1-ubyte", &labels}}) {
      const std::string path = (dir_ / (name + (gz ? ".gz" : ""))).string();
      gzFile f = gzopen(path.c_str(), gz ? "wb" : "wbT");  // T: written without compression
      ASSERT_NE(f, nullptr);
      ASSERT_EQ(gzwrite(f, bytes->data(), static_cast<unsigned>(bytes->size())), static_cast<int>(bytes->size()));
      gzclose(f);
    }
  }

  std::string path(const std::string& name) const { return (dir_ / name).string(); }
  fs::path dir_;
};

}  // namespace

TEST_F(StreamingEquivalence, RawIdx) {
  write_idx("train", 203, false);
  write_idx("t10k", 57, false);
  auto d = ts::open_dataset({.name = "fashion_mnist", .root = dir_.string()});
  expect_same_batches(*d.train, idx_reference(path("train-images-idx3-ubyte"), path("train-labels-idx1-ubyte"), 0.2860f, 0.3530f), 8, 30);
  expect_same_batches(*d.test, idx_reference(path("t10k-images-idx3-ubyte"), path("t10k-labels-idx1-ubyte"), 0.2860f, 0.3530f), 8, 3);
}

TEST_F(StreamingEquivalence, GzipIdx) {
  write_idx("train", 203, true);
  write_idx("t10k", 57, true);
  auto d = ts::open_dataset({.name = "mnist", .root = dir_.string()});
  expect_same_batches(*d.train, idx_reference(path("train-images-idx3-ubyte.gz"), path("train-labels-idx1-ubyte.gz"), 0.1307f, 0.3081f), 8, 30);
}

TEST_F(StreamingEquivalence, Cifar10) {
  std::vector<std::string> train;
  for (int k = 1; k <= 5; ++k) {
    train.push_back(path("data_batch_" + std::to_string(k) + ".bin"));
    std::ofstream f(train.back(), std::ios::binary);
    for (int r = 0; r < 3 + k; ++r) {
      f.put(static_cast<char>((r * 3 + k) % 10));
      for (int i = 0; i < 3072; ++i) f.put(static_cast<char>((i * 7 + r * 13 + k) % 256));
    }
  }
  std::filesystem::copy_file(train[0], path("test_batch.bin"));
  auto d = ts::open_dataset({.name = "cifar10", .root = dir_.string()});
  expect_same_batches(*d.train, cifar_reference(train), 4, 10);
  expect_same_batches(*d.test, cifar_reference({path("test_batch.bin")}), 1, 2);
}

TEST(StreamingEquivalenceReal, FashionMnist) {
  const std::string root = "/usr/share/datasets/fashion-mnist";
  if (!fs::exists(fs::path(root) / "train-images-idx3-ubyte.gz"))
    FAIL() << "Fashion-MNIST not installed at " << root
           << " (scripts/setup.sh installs the Debian package dataset-fashion-mnist)";
  auto d = ts::open_dataset({.name = "fashion_mnist", .root = root});
  // Training: 500 batches of 64 per rank = more than one epoch of 60000 on 2 ranks.
  expect_same_batches(*d.train, idx_reference(root + "/train-images-idx3-ubyte.gz", root + "/train-labels-idx1-ubyte.gz", 0.2860f, 0.3530f), 64, 500);
  expect_same_batches(*d.test, idx_reference(root + "/t10k-images-idx3-ubyte.gz", root + "/t10k-labels-idx1-ubyte.gz", 0.2860f, 0.3530f), 100, 10);
}
