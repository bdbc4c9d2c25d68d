// Tests for the synthetic ImageNet-shaped JPEG set (data/synthetic_jpegs.h): images are a
// function of (seed, split, class, index) alone, sized about 500x375, and carry a class signal
// a nearest-class-mean rule on mean colours already separates; the written tree is an
// ImageFolder the jpeg_dir reader opens, and the same options write the same bytes.
#include <gtest/gtest.h>
#include <unistd.h>

#include <algorithm>
#include <array>
#include <cmath>
#include <filesystem>

#include "core/error.h"
#include "data/jpeg_dir_source.h"
#include "data/posix_storage.h"
#include "data/synthetic_jpegs.h"

namespace fs = std::filesystem;

namespace {

std::array<double, 3> mean_colour(const ts::Image8& im) {
  std::array<double, 3> m{};
  for (size_t i = 0; i < im.pixels.size(); ++i) m[i % 3] += im.pixels[i];
  for (double& v : m) v /= static_cast<double>(im.pixels.size() / 3);
  return m;
}

TEST(SyntheticJpegs, ImagesAreDeterministicAndImagenetSized) {
  ts::SyntheticJpegOptions o;
  for (int i = 0; i < 20; ++i) {
    const ts::Image8 a = ts::synthetic_jpeg_image(o, "train", 3, i);
    EXPECT_EQ(a.pixels, ts::synthetic_jpeg_image(o, "train", 3, i).pixels);
    EXPECT_NE(a.pixels, ts::synthetic_jpeg_image(o, "val", 3, i).pixels);
    const int long_side = std::max(a.width, a.height), short_side = std::min(a.width, a.height);
    EXPECT_GE(long_side, 400);
    EXPECT_LE(long_side, 600);
    EXPECT_GE(short_side, 300);
    EXPECT_EQ(a.channels, 3);
  }
}

TEST(SyntheticJpegs, ClassesAreSeparable) {
  // Nearest class mean (from 6 training images per class) on the mean colour of 4 others.
  ts::SyntheticJpegOptions o;
  const int classes = 10;
  std::vector<std::array<double, 3>> centre(classes);
  for (int c = 0; c < classes; ++c)
    for (int i = 0; i < 6; ++i) {
      const auto m = mean_colour(ts::synthetic_jpeg_image(o, "train", c, i));
      for (int k = 0; k < 3; ++k) centre[c][k] += m[k] / 6;
    }
  int right = 0;
  for (int c = 0; c < classes; ++c)
    for (int i = 0; i < 4; ++i) {
      const auto m = mean_colour(ts::synthetic_jpeg_image(o, "val", c, i));
      int best = 0;
      double best_d = 1e300;
      for (int k = 0; k < classes; ++k) {
        double d = 0;
        for (int j = 0; j < 3; ++j) d += (m[j] - centre[k][j]) * (m[j] - centre[k][j]);
        if (d < best_d) best_d = d, best = k;
      }
      right += best == c;
    }
  EXPECT_GE(right, 30) << "of 40";
}

TEST(SyntheticJpegs, WritesAnImageFolderTheReaderOpens) {
  const fs::path dir = fs::temp_directory_path() / ("ts_synthetic_jpegs_" + std::to_string(::getpid()));
  fs::remove_all(dir);
  ts::SyntheticJpegOptions o;
  o.out = dir.string();
  o.classes = 3;
  o.per_class = 2;
  o.val_per_class = 1;
  const ts::SyntheticJpegSummary s = ts::make_synthetic_jpegs(o);
  EXPECT_EQ(s.images, 9);
  EXPECT_EQ(ts::make_synthetic_jpegs(o).tree_sha256, s.tree_sha256);
  ts::JpegDirOptions j;
  j.root = o.out;
  j.sample = ts::Shape{3, 32, 32};
  const auto storage = std::make_shared<ts::PosixStorage>();
  const auto train = ts::open_jpeg_dir_source(storage, j, ts::Split::train);
  const auto val = ts::open_jpeg_dir_source(storage, j, ts::Split::test);
  EXPECT_EQ(train->count(), 6);
  EXPECT_EQ(val->count(), 3);
  EXPECT_EQ(train->spec().classes, 3);
  std::vector<float> image(3 * 32 * 32);
  int32_t label = -1;
  val->read(2, image.data(), &label, nullptr);
  EXPECT_EQ(label, 2);
  fs::remove_all(dir);
  o.quality = 0;
  EXPECT_THROW(ts::make_synthetic_jpegs(o), ts::ConfigError);
}

}  // namespace
