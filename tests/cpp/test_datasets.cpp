// Tests for the data-set registry: the names the config module accepts, each data set's
// formats, open_dataset on files written here (IDX statistics per data set, CIFAR-10),
// generated data sets shaped by the options, and the configuration errors.
#include <gtest/gtest.h>
#include <unistd.h>

#include <cstdint>
#include <filesystem>
#include <fstream>
#include <string>
#include <vector>

#include "core/error.h"
#include "data/datasets.h"

namespace fs = std::filesystem;

namespace {

using Names = std::vector<std::string>;

void write_bytes(const fs::path& p, const std::vector<uint8_t>& b) {
  std::ofstream f(p, std::ios::binary);
  f.write(reinterpret_cast<const char*>(b.data()), static_cast<std::streamsize>(b.size()));
}

// A raw IDX split of `count` 2x2 images whose pixels are all 0, labels i % 10.
void write_idx_split(const fs::path& dir, const std::string& prefix, uint8_t count) {
  std::vector<uint8_t> images = {0, 0, 8, 3, 0, 0, 0, count, 0, 0, 0, 2, 0, 0, 0, 2};
  images.resize(images.size() + 4u * count, 0);
  write_bytes(dir / (prefix + "-images-idx3-ubyte"), images);
  std::vector<uint8_t> labels = {0, 0, 8, 1, 0, 0, 0, count};
  for (uint8_t i = 0; i < count; ++i) labels.push_back(i % 10);
  write_bytes(dir / (prefix + "-labels-idx1-ubyte"), labels);
}

template <typename F>
std::string config_error_of(F f) {
  try {
    f();
  } catch (const ts::ConfigError& e) {
    return e.what();
  }
  ADD_FAILURE() << "expected a ConfigError";
  return "";
}

class Datasets : public ::testing::Test {
 protected:
  void SetUp() override {
    dir_ = fs::temp_directory_path() / ("ts_datasets_" + std::to_string(::getpid()) + "_" +
                                        ::testing::UnitTest::GetInstance()->current_test_info()->name());
    fs::remove_all(dir_);
    fs::create_directories(dir_);
  }
  void TearDown() override { fs::remove_all(dir_); }
  fs::path dir_;
};

// Sample 0 of a split whose pixels are 0: (0 - mean) / stddev.
float first_value(const ts::SampleSource& s) {
  std::vector<float> image(static_cast<size_t>(s.spec().sample.numel()));
  int32_t label = -1;
  s.read(0, image.data(), &label, nullptr);
  return image[0];
}

}  // namespace

TEST(DatasetRegistry, NamesAndFormats) {
  EXPECT_EQ(ts::dataset_names(), (Names{"fashion_mnist", "mnist", "cifar10", "synthetic", "neuron", "imagefolder"}));
  EXPECT_EQ(ts::dataset_format_names(), (Names{"idx", "records", "hdf5", "jpeg_dir", "cifar_bin", "synthetic"}));
  EXPECT_EQ(ts::dataset_formats("mnist").front(), "idx");
  EXPECT_EQ(ts::dataset_formats("synthetic").front(), "synthetic");
  EXPECT_EQ(ts::dataset_formats("neuron").front(), "synthetic");
  EXPECT_EQ(ts::dataset_formats("cifar10"), (Names{"cifar_bin", "records", "hdf5"}));
  EXPECT_EQ(ts::dataset_formats("fashion_mnist"), (Names{"idx", "records", "hdf5", "jpeg_dir"}));
  EXPECT_EQ(ts::dataset_class_names("fashion_mnist").front(), "T-shirt_top");
  EXPECT_EQ(ts::dataset_class_names("cifar10").size(), 10u);
  EXPECT_TRUE(ts::dataset_class_names("synthetic").empty());
}

TEST(DatasetRegistry, UnknownNameListsTheKnownOnes) {
  for (auto call : {+[] { ts::dataset_formats("kmnist"); },
                    +[] { ts::open_dataset({.name = "kmnist"}); }}) {
    const std::string msg = config_error_of(call);
    EXPECT_NE(msg.find("'kmnist'"), std::string::npos) << msg;
    EXPECT_NE(msg.find("fashion_mnist, mnist, cifar10, synthetic, neuron"), std::string::npos) << msg;
  }
}

TEST(DatasetRegistry, FormatMustFitTheDataSet) {
  const std::string msg = config_error_of([] { ts::open_dataset({.name = "cifar10", .format = "idx"}); });
  EXPECT_NE(msg.find("'idx'"), std::string::npos) << msg;
  EXPECT_NE(msg.find("accepts: cifar_bin"), std::string::npos) << msg;
}

TEST_F(Datasets, IdxStatisticsPerDataSetAndDefaultFormat) {
  write_idx_split(dir_, "train", 12);
  write_idx_split(dir_, "t10k", 5);
  auto fashion = ts::open_dataset({.name = "fashion_mnist", .root = dir_.string()});
  EXPECT_EQ(fashion.train->count(), 12);
  EXPECT_EQ(fashion.test->count(), 5);
  EXPECT_EQ(fashion.train->spec().sample, (ts::Shape{1, 2, 2}));
  EXPECT_FLOAT_EQ(first_value(*fashion.train), -0.2860f / 0.3530f);
  EXPECT_FLOAT_EQ(first_value(*fashion.test), -0.2860f / 0.3530f);  // the training statistics
  auto mnist = ts::open_dataset({.name = "mnist", .format = "idx", .root = dir_.string()});
  EXPECT_FLOAT_EQ(first_value(*mnist.train), -0.1307f / 0.3081f);
}

TEST_F(Datasets, UnknownStorage) {
  write_idx_split(dir_, "train", 3);
  write_idx_split(dir_, "t10k", 3);
  const std::string msg =
      config_error_of([&] { ts::open_dataset({.name = "mnist", .root = dir_.string(), .storage = "s3"}); });
  EXPECT_NE(msg.find("'s3'"), std::string::npos) << msg;
}

TEST_F(Datasets, Cifar10) {
  std::vector<uint8_t> record(3073, 0);
  record[0] = 4;
  write_bytes(dir_ / "test_batch.bin", record);
  for (int k = 1; k <= 5; ++k) write_bytes(dir_ / ("data_batch_" + std::to_string(k) + ".bin"), record);
  auto d = ts::open_dataset({.name = "cifar10", .root = dir_.string()});
  EXPECT_EQ(d.train->count(), 5);
  EXPECT_EQ(d.test->count(), 1);
  EXPECT_FLOAT_EQ(first_value(*d.test), -0.4914f / 0.2470f);
}

TEST(DatasetRegistryGenerated, SyntheticIsShapedByTheOptions) {
  auto d = ts::open_dataset({.name = "synthetic", .seed = 4, .synthetic_samples = 3000,
                             .synthetic = {ts::Shape{3, 224, 224}, 1000, 0}});
  EXPECT_EQ(d.train->count(), 3000);
  EXPECT_EQ(d.test->count(), 1024);  // the test split is at most 1024 samples
  EXPECT_EQ(d.train->spec().sample, (ts::Shape{3, 224, 224}));
  EXPECT_EQ(d.train->spec().classes, 1000);
  // The splits are different samples; the same options give the same samples.
  auto again = ts::open_dataset({.name = "synthetic", .seed = 4, .synthetic_samples = 3000,
                                 .synthetic = {ts::Shape{3, 224, 224}, 1000, 0}});
  EXPECT_NE(first_value(*d.train), first_value(*d.test));
  EXPECT_EQ(first_value(*d.train), first_value(*again.train));
}

TEST(DatasetRegistryGenerated, NeuronHasItsOwnShape) {
  auto d = ts::open_dataset({.name = "neuron", .synthetic_samples = 100});
  EXPECT_EQ(d.train->count(), 100);
  EXPECT_EQ(d.test->count(), 100);
  EXPECT_EQ(d.train->spec().sample, (ts::Shape{1}));
  EXPECT_EQ(d.train->spec().classes, 0);
  EXPECT_EQ(d.train->spec().outputs, 1);
}
