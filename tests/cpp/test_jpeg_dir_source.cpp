// Tests for the jpeg_dir format (data/jpeg_dir_source.h) on small JPEG trees this test writes
// with encode_jpeg: both ImageFolder layouts (split folders with test/ or val/, and one flat
// folder with a hashed held-out share), classes and labels, decoded pixel values, grey and RGB,
// damaged files named in the error, bad layouts, and the registry's imagefolder / fashion_mnist
// entries read through the Loader with several threads (same batches as one thread).
#include <gtest/gtest.h>
#include <unistd.h>

#include <cmath>
#include <filesystem>
#include <fstream>
#include <set>
#include <string>
#include <vector>

#include "core/error.h"
#include "data/datasets.h"
#include "data/jpeg_codec.h"
#include "data/jpeg_dir_source.h"
#include "data/loader.h"
#include "data/posix_storage.h"

namespace fs = std::filesystem;

namespace {

class JpegDirTest : public ::testing::Test {
 protected:
  void SetUp() override {
    dir_ = fs::temp_directory_path() /
           ("ts_jpeg_dir_" + std::to_string(::getpid()) + "_" +
            ::testing::UnitTest::GetInstance()->current_test_info()->name());
    fs::remove_all(dir_);
    fs::create_directories(dir_);
  }
  void TearDown() override { fs::remove_all(dir_); }

  // A w x h JPEG of one colour (value per channel) at `rel` under the test folder.
  void write_jpeg(const std::string& rel, int w, int h, int channels, uint8_t value) {
    ts::Image8 im{w, h, channels, std::vector<uint8_t>(static_cast<size_t>(w) * h * channels, value)};
    write_bytes(rel, ts::encode_jpeg(im, 95));
  }
  void write_bytes(const std::string& rel, const std::vector<uint8_t>& bytes) {
    const fs::path p = dir_ / rel;
    fs::create_directories(p.parent_path());
    std::ofstream(p, std::ios::binary).write(reinterpret_cast<const char*>(bytes.data()), static_cast<std::streamsize>(bytes.size()));
  }

  std::unique_ptr<ts::SampleSource> open(ts::Split split, ts::Shape sample = ts::Shape{1, 8, 8}) {
    ts::JpegDirOptions o;
    o.root = dir_.string();
    o.sample = sample;
    return ts::open_jpeg_dir_source(std::make_shared<ts::PosixStorage>(), o, split);
  }

  std::string error_of(ts::Split split) {
    try {
      open(split);
    } catch (const std::runtime_error& e) {
      return e.what();
    }
    return "";
  }

  fs::path dir_;
};

TEST_F(JpegDirTest, SplitLayoutClassesLabelsAndPixels) {
  // Class "b" sorts after "a": labels 0 and 1. Value 200 in a, 40 in b.
  for (int i = 0; i < 3; ++i) write_jpeg("train/b/" + std::to_string(i) + ".jpg", 20, 12, 1, 40);
  for (int i = 0; i < 2; ++i) write_jpeg("train/a/" + std::to_string(i) + ".JPEG", 9, 30, 1, 200);
  write_jpeg("test/b/x.jpeg", 16, 16, 1, 40);
  write_jpeg("test/a/y.jpg", 16, 16, 1, 200);
  write_bytes("train/a/notes.txt", {'h', 'i'});  // not a JPEG name: ignored
  const auto train = open(ts::Split::train), test = open(ts::Split::test);
  EXPECT_EQ(train->count(), 5);
  EXPECT_EQ(test->count(), 2);
  EXPECT_EQ(train->spec().classes, 2);
  EXPECT_EQ(test->spec().classes, 2);  // the training folder defines the classes
  EXPECT_EQ(train->spec().sample, (ts::Shape{1, 8, 8}));
  std::vector<float> image(64);
  int32_t label = -1;
  for (int64_t i = 0; i < train->count(); ++i) {
    train->read_augmented(i, 77 + static_cast<uint64_t>(i), image.data(), &label, nullptr);
    EXPECT_EQ(label, i < 2 ? 0 : 1);
    // One colour: any crop or flip keeps it; statistics {} scale to [0, 1].
    for (float v : image) EXPECT_NEAR(v, (i < 2 ? 200 : 40) / 255.0, 3 / 255.0);
  }
  test->read(1, image.data(), &label, nullptr);
  EXPECT_EQ(label, 1);
  EXPECT_NE(train->describe().find("jpeg_dir"), std::string::npos);
}

// A class folder emptied in train/ (its test images kept) or missing from test/: the splits'
// classes differ, refused naming the class (it trained on 9 classes of 10 without a word).
TEST_F(JpegDirTest, SplitsThatDoNotHoldTheSameClassesAreRefused) {
  for (const char* c : {"ant", "bee", "cat"}) {
    write_jpeg(std::string("train/") + c + "/0.jpg", 8, 8, 1, 1);
    write_jpeg(std::string("test/") + c + "/0.jpg", 8, 8, 1, 1);
  }
  EXPECT_EQ(open(ts::Split::train)->count(), 3);
  fs::remove(dir_ / "train" / "bee" / "0.jpg");  // emptied, the folder kept
  EXPECT_EQ(error_of(ts::Split::train),
            "jpeg_dir " + (dir_ / "train" / "bee").string() + ": class 'bee' (label 1 of 3) has no .jpg/.jpeg files "
            "here, so the splits do not hold the same classes; add its images, or remove the class folder from every split");
  write_jpeg("train/bee/0.jpg", 8, 8, 1, 1);
  fs::remove_all(dir_ / "test" / "cat");  // the test split lacks a class
  EXPECT_NE(error_of(ts::Split::test).find((dir_ / "test" / "cat").string() + ": class 'cat' (label 2 of 3) has no"),
            std::string::npos)
      << error_of(ts::Split::test);
  EXPECT_EQ(open(ts::Split::train)->count(), 3);
  // The flat layout: a class whose every file is held out (or that has none) has no training files.
  fs::remove_all(dir_ / "train");
  fs::remove_all(dir_ / "test");
  for (int i = 0; i < 20; ++i) write_jpeg("x/" + std::to_string(i) + ".jpg", 8, 8, 1, 1);
  fs::create_directories(dir_ / "y");
  EXPECT_NE(error_of(ts::Split::train).find("class 'y' (label 1 of 2) has no training files"), std::string::npos)
      << error_of(ts::Split::train);
}

TEST_F(JpegDirTest, ValStandsForTestAndRgbDecodes) {
  write_jpeg("train/cat/0.jpg", 32, 24, 3, 128);
  write_jpeg("val/cat/0.jpg", 24, 32, 3, 128);
  const auto test = open(ts::Split::test, ts::Shape{3, 16, 16});
  ASSERT_EQ(test->count(), 1);
  std::vector<float> image(3 * 256);
  int32_t label = -1;
  test->read(0, image.data(), &label, nullptr);
  for (float v : image) EXPECT_NEAR(v, 128 / 255.0, 3 / 255.0);
}

TEST_F(JpegDirTest, FlatLayoutHoldsOutAFixedShare) {
  std::set<std::string> all;
  for (const char* c : {"x", "y"})
    for (int i = 0; i < 60; ++i) {
      const std::string name = std::string(c) + "/" + std::to_string(i) + ".jpg";
      write_jpeg(name, 8, 8, 1, static_cast<uint8_t>(i));
      all.insert(name);
    }
  const auto train = open(ts::Split::train), test = open(ts::Split::test);
  EXPECT_EQ(train->count() + test->count(), 120);
  EXPECT_GT(test->count(), 2);   // 10% of 120 = 12 expected
  EXPECT_LT(test->count(), 30);
  // The choice is the file's name alone: the same files each time, nothing shared.
  int held = 0;
  for (const auto& name : all) held += ts::jpeg_dir_holds_out(name.substr(0, 1), name.substr(2), 0.1);
  EXPECT_EQ(held, test->count());
  EXPECT_EQ(ts::jpeg_dir_holds_out("x", "3.jpg", 0.1), ts::jpeg_dir_holds_out("x", "3.jpg", 0.1));
  EXPECT_EQ(open(ts::Split::test)->count(), test->count());
}

TEST_F(JpegDirTest, DamagedJpegIsAnErrorNamingTheFile) {
  write_jpeg("train/a/good.jpg", 8, 8, 1, 10);
  write_bytes("train/a/junk.jpg", std::vector<uint8_t>(300, 0x5a));
  ts::Image8 im{64, 64, 3, std::vector<uint8_t>(64 * 64 * 3, 7)};
  std::vector<uint8_t> cut = ts::encode_jpeg(im, 90);
  cut.resize(cut.size() / 2);
  write_bytes("train/a/truncated.jpg", cut);
  const auto train = open(ts::Split::train);
  ASSERT_EQ(train->count(), 3);  // good, junk, truncated (sorted)
  std::vector<float> image(64);
  int32_t label = 0;
  for (int64_t i : {1, 2}) {
    try {
      train->read(i, image.data(), &label, nullptr);
      ADD_FAILURE() << "sample " << i << " decoded";
    } catch (const ts::RuntimeError& e) {
      EXPECT_NE(std::string(e.what()).find(i == 1 ? "junk.jpg" : "truncated.jpg"), std::string::npos) << e.what();
    }
  }
}

// A data set's own class order (Fashion-MNIST's names) instead of the sorted folder names.
TEST_F(JpegDirTest, NamedClassesSetTheLabels) {
  write_jpeg("train/a/0.jpg", 8, 8, 1, 1);
  write_jpeg("train/b/0.jpg", 8, 8, 1, 1);
  write_jpeg("test/a/0.jpg", 8, 8, 1, 1);
  ts::JpegDirOptions o;
  o.root = dir_.string();
  o.sample = ts::Shape{1, 8, 8};
  o.class_names = {"b", "a", "unused"};
  const auto storage = std::make_shared<ts::PosixStorage>();
  const auto train = ts::open_jpeg_dir_source(storage, o, ts::Split::train);
  EXPECT_EQ(train->spec().classes, 3);
  std::vector<float> image(64);
  int32_t label = -1;
  train->read(0, image.data(), &label, nullptr);  // train/a/0.jpg
  EXPECT_EQ(label, 1);
  train->read(1, image.data(), &label, nullptr);  // train/b/0.jpg
  EXPECT_EQ(label, 0);
  o.class_names = {"b"};
  try {
    ts::open_jpeg_dir_source(storage, o, ts::Split::train);
    ADD_FAILURE() << "folder a accepted";
  } catch (const ts::RuntimeError& e) {
    EXPECT_NE(std::string(e.what()).find("class 'a'"), std::string::npos) << e.what();
  }
}

TEST_F(JpegDirTest, BadLayoutsAreClearErrors) {
  EXPECT_NE(error_of(ts::Split::train).find("no class subfolders"), std::string::npos);
  write_jpeg("train/a/0.jpg", 8, 8, 1, 1);
  EXPECT_NE(error_of(ts::Split::test).find("neither test/ nor val/"), std::string::npos);
  write_jpeg("test/zebra/0.jpg", 8, 8, 1, 1);
  EXPECT_NE(error_of(ts::Split::test).find("class 'zebra'"), std::string::npos);
  fs::create_directories(dir_ / "train" / "empty");
  fs::remove_all(dir_ / "train" / "a");
  EXPECT_NE(error_of(ts::Split::train).find("no .jpg/.jpeg files"), std::string::npos);
  EXPECT_THROW(open(ts::Split::train, ts::Shape{784}), ts::ConfigError);
  EXPECT_THROW(open(ts::Split::train, ts::Shape{2, 8, 8}), ts::ConfigError);
  ts::JpegDirOptions o;
  o.root = (dir_ / "missing").string();
  o.sample = ts::Shape{1, 8, 8};
  EXPECT_THROW(ts::open_jpeg_dir_source(std::make_shared<ts::PosixStorage>(), o, ts::Split::train), ts::RuntimeError);
}

// The registry's imagefolder through the Loader: 1 and 3 threads give the same batches
// (augmentation is drawn per (seed, epoch, index), not per thread).
TEST_F(JpegDirTest, ImagefolderThroughTheLoaderIsThreadIndependent) {
  for (int c = 0; c < 3; ++c)
    for (int i = 0; i < 8; ++i) {
      ts::Image8 im{40 + i, 30, 3, {}};
      for (int p = 0; p < im.width * im.height; ++p)
        for (int k = 0; k < 3; ++k) im.pixels.push_back(static_cast<uint8_t>((p * (k + 1) + 50 * c) % 256));
      write_bytes("train/c" + std::to_string(c) + "/" + std::to_string(i) + ".jpg", ts::encode_jpeg(im, 90));
    }
  ts::DataOptions o;
  o.name = "imagefolder";
  o.root = dir_.string();
  o.image_shape = ts::Shape{3, 12, 12};
  auto batches = [&](int threads) {
    auto train = ts::open_split(o, ts::Split::train);
    ts::LoaderOptions lo;
    lo.batch = 4;
    lo.threads = threads;
    ts::Loader loader(*train, lo);
    std::vector<float> all;
    ts::Batch b;
    for (int step = 0; step < 12; ++step) {  // two epochs of 6 batches
      EXPECT_TRUE(loader.next(b));
      all.insert(all.end(), b.images, b.images + 4 * 3 * 144);
    }
    return all;
  };
  const std::vector<float> one = batches(1);
  EXPECT_EQ(one, batches(3));
  // Epoch 2 augments differently from epoch 1 (another seed per sample).
  EXPECT_NE(std::vector<float>(one.begin(), one.begin() + 1728), std::vector<float>(one.begin() + 6 * 1728, one.begin() + 7 * 1728));
  // Fashion-MNIST as jpeg_dir takes its own ten class names (labels as idx has them): the
  // folders c0..c2 are not among them.
  o.name = "fashion_mnist";
  o.format = "jpeg_dir";
  o.image_shape = ts::Shape{1, 12, 12};
  try {
    ts::open_split(o, ts::Split::train);
    ADD_FAILURE() << "folder c0 accepted as a Fashion-MNIST class";
  } catch (const ts::RuntimeError& e) {
    EXPECT_NE(std::string(e.what()).find("class 'c0'"), std::string::npos) << e.what();
  }
}

}  // namespace
