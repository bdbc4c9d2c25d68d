// Tests for the image transforms (data/image_transform.h): the table-driven resampler against a
// direct per-pixel bilinear formula (half-pixel centres), resize + centre crop against doing the
// two steps one after the other, crops and flips on small images with known pixels, and the
// random-resized-crop boxes against torchvision's rules (bounds, area, ratio, fallback).
#include <gtest/gtest.h>

#include <algorithm>
#include <cmath>
#include <cstdint>
#include <vector>

#include "core/error.h"
#include "core/rng.h"
#include "data/image_transform.h"

namespace {

ts::Image8 random_image(int w, int h, int c, uint64_t seed) {
  ts::Rng rng(seed);
  ts::Image8 im{w, h, c, std::vector<uint8_t>(static_cast<size_t>(w) * h * c)};
  for (auto& p : im.pixels) p = static_cast<uint8_t>(rng.below(256));
  return im;
}

double pixel(const ts::Image8& im, int x, int y, int c) {
  return im.pixels[(static_cast<size_t>(y) * im.width + x) * im.channels + c];
}

// The reference: every output pixel straight from the definition, in doubles, unnormalised
// (values 0..255; stats {} scales by 1/255, so the test multiplies back).
std::vector<double> naive_resample(const ts::Image8& im, const ts::SourceWindow& w, int oh, int ow) {
  std::vector<double> out(static_cast<size_t>(im.channels) * oh * ow);
  for (int c = 0; c < im.channels; ++c)
    for (int y = 0; y < oh; ++y)
      for (int x = 0; x < ow; ++x) {
        const int from_x = w.flip ? ow - 1 - x : x;
        double sx = w.x + (from_x + 0.5) * w.width / ow - 0.5;
        double sy = w.y + (y + 0.5) * w.height / oh - 0.5;
        sx = std::min(std::max(sx, 0.0), im.width - 1.0);
        sy = std::min(std::max(sy, 0.0), im.height - 1.0);
        const int x0 = static_cast<int>(std::floor(sx)), y0 = static_cast<int>(std::floor(sy));
        const int x1 = std::min(x0 + 1, im.width - 1), y1 = std::min(y0 + 1, im.height - 1);
        const double ax = sx - x0, ay = sy - y0;
        const double v = (1 - ay) * ((1 - ax) * pixel(im, x0, y0, c) + ax * pixel(im, x1, y0, c)) +
                         ay * ((1 - ax) * pixel(im, x0, y1, c) + ax * pixel(im, x1, y1, c));
        out[(static_cast<size_t>(c) * oh + y) * ow + x] = v;
      }
  return out;
}

std::vector<double> fast_resample(const ts::Image8& im, const ts::SourceWindow& w, int oh, int ow) {
  std::vector<float> dst(static_cast<size_t>(im.channels) * oh * ow);
  ts::resample_normalise(im, w, oh, ow, {}, dst.data());
  std::vector<double> out(dst.size());
  for (size_t i = 0; i < dst.size(); ++i) out[i] = dst[i] * 255.0;
  return out;
}

void expect_close(const std::vector<double>& a, const std::vector<double>& b, double tol, const char* what) {
  ASSERT_EQ(a.size(), b.size()) << what;
  double worst = 0;
  for (size_t i = 0; i < a.size(); ++i) worst = std::max(worst, std::abs(a[i] - b[i]));
  EXPECT_LT(worst, tol) << what;
}

TEST(ImageTransform, ResamplerMatchesTheBilinearFormula) {
  ts::Rng rng(7);
  for (int trial = 0; trial < 40; ++trial) {
    const int c = trial % 2 ? 3 : 1;
    const ts::Image8 im = random_image(5 + static_cast<int>(rng.below(60)), 5 + static_cast<int>(rng.below(60)), c, trial);
    ts::SourceWindow w;
    w.width = 1 + rng.uniform() * (im.width - 1);
    w.height = 1 + rng.uniform() * (im.height - 1);
    w.x = rng.uniform() * (im.width - w.width);
    w.y = rng.uniform() * (im.height - w.height);
    w.flip = rng.below(2) == 1;
    const int oh = 1 + static_cast<int>(rng.below(50)), ow = 1 + static_cast<int>(rng.below(50));  // up and down
    expect_close(fast_resample(im, w, oh, ow), naive_resample(im, w, oh, ow), 2e-3, "window");
  }
}

TEST(ImageTransform, CentreCropIsResizeThenCrop) {
  for (auto [w, h, out] : {std::tuple{500, 375, 224}, {375, 500, 224}, {61, 47, 28}, {28, 28, 28}, {40, 90, 32}}) {
    const ts::Image8 im = random_image(w, h, 3, static_cast<uint64_t>(w * h));
    // Step 1, Resize(round(out / 0.875)): shorter side -> size, longer -> int(size * long / short).
    const int size = static_cast<int>(std::nearbyint(out / 0.875));
    const int rw = w <= h ? size : static_cast<int>(static_cast<double>(size) * w / h);
    const int rh = w <= h ? static_cast<int>(static_cast<double>(size) * h / w) : size;
    const std::vector<double> resized = naive_resample(im, ts::whole_image_window(w, h), rh, rw);
    // Step 2, CenterCrop(out): offsets int(round((resized - out) / 2)).
    const int left = static_cast<int>(std::nearbyint((rw - out) / 2.0)), top = static_cast<int>(std::nearbyint((rh - out) / 2.0));
    std::vector<double> cropped(static_cast<size_t>(3) * out * out);
    for (int c = 0; c < 3; ++c)
      for (int y = 0; y < out; ++y)
        for (int x = 0; x < out; ++x)
          cropped[(static_cast<size_t>(c) * out + y) * out + x] = resized[(static_cast<size_t>(c) * rh + y + top) * rw + x + left];
    const ts::SourceWindow window = ts::centre_crop_window(w, h, out, out);
    expect_close(fast_resample(im, window, out, out), cropped, 2e-3, "centre crop");
  }
}

TEST(ImageTransform, KnownPixelsCropAndFlip) {
  // A 4x3 grey image, pixel (x, y) = 10 * y + x.
  ts::Image8 im{4, 3, 1, {}};
  for (int y = 0; y < 3; ++y)
    for (int x = 0; x < 4; ++x) im.pixels.push_back(static_cast<uint8_t>(10 * y + x));
  auto run = [&](const ts::SourceWindow& w, int oh, int ow) { return fast_resample(im, w, oh, ow); };
  expect_close(run(ts::whole_image_window(4, 3), 3, 4), {0, 1, 2, 3, 10, 11, 12, 13, 20, 21, 22, 23}, 1e-4, "identity");
  expect_close(run({0, 0, 4, 3, true}, 3, 4), {3, 2, 1, 0, 13, 12, 11, 10, 23, 22, 21, 20}, 1e-4, "flip");
  expect_close(run({1, 1, 2, 2, false}, 2, 2), {11, 12, 21, 22}, 1e-4, "crop");
  expect_close(run({1, 1, 2, 2, true}, 2, 2), {12, 11, 22, 21}, 1e-4, "crop + flip");
  // Halving 4 columns into 2: centres at source x = 0.5 and 2.5, the means of neighbours.
  expect_close(run({0, 0, 4, 1, false}, 1, 2), {0.5, 2.5}, 1e-4, "downscale");
  // RGB: channels become planes, the first row (x = 0..1) of each.
  ts::Image8 rgb{2, 1, 3, {1, 2, 3, 4, 5, 6}};
  std::vector<float> dst(6);
  ts::resample_normalise(rgb, ts::whole_image_window(2, 1), 1, 2, {}, dst.data());
  std::vector<double> planes(dst.begin(), dst.end());
  for (auto& v : planes) v *= 255.0;
  expect_close(planes, {1, 4, 2, 5, 3, 6}, 1e-4, "planar");
}

TEST(ImageTransform, NormalisesPerChannel) {
  ts::Image8 rgb{1, 1, 3, {255, 0, 51}};
  std::vector<float> dst(3);
  ts::resample_normalise(rgb, ts::whole_image_window(1, 1), 1, 1, {{0.5f, 0.5f, 0.2f}, {0.5f, 0.25f, 0.1f}}, dst.data());
  EXPECT_NEAR(dst[0], 1.0, 1e-5);
  EXPECT_NEAR(dst[1], -2.0, 1e-5);
  EXPECT_NEAR(dst[2], 0.0, 1e-5);
  EXPECT_THROW(ts::resample_normalise(rgb, ts::whole_image_window(1, 1), 1, 1, {{0.5f, 0.5f}, {0.5f, 0.5f}}, dst.data()),
               ts::RuntimeError);
}

TEST(ImageTransform, RandomResizedCropFollowsTorchvisionRules) {
  int flips = 0;
  const int draws = 2000;
  for (int i = 0; i < draws; ++i) {
    ts::Rng rng(ts::seed_mix(3, static_cast<uint64_t>(i)));
    const ts::SourceWindow w = ts::random_resized_crop_window(500, 375, rng);
    ASSERT_EQ(w.x, std::floor(w.x));
    ASSERT_EQ(w.width, std::floor(w.width));
    ASSERT_GE(w.x, 0);
    ASSERT_GE(w.y, 0);
    ASSERT_LE(w.x + w.width, 500);
    ASSERT_LE(w.y + w.height, 375);
    const double area = w.width * w.height / (500.0 * 375.0);
    EXPECT_GT(area, 0.07) << i;  // 0.08 up to the rounding of the sides
    const double ratio = w.width / w.height;
    EXPECT_GT(ratio, 0.7);
    EXPECT_LT(ratio, 1.4);
    flips += w.flip;
  }
  EXPECT_GT(flips, draws * 0.45);
  EXPECT_LT(flips, draws * 0.55);
}

TEST(ImageTransform, RandomResizedCropFallsBackToTheCentre) {
  // 1000x10: no box of ratio 3/4..4/3 with 8% of the area fits; torchvision takes h = 10,
  // w = round(10 * 4/3) = 13, centred.
  ts::Rng rng(1);
  const ts::SourceWindow w = ts::random_resized_crop_window(1000, 10, rng);
  EXPECT_EQ(w.width, 13);
  EXPECT_EQ(w.height, 10);
  EXPECT_EQ(w.x, (1000 - 13) / 2);
  EXPECT_EQ(w.y, 0);
}

TEST(ImageTransform, SameSeedSameOutputAndEvalIgnoresIt) {
  const ts::Image8 im = random_image(80, 60, 3, 9);
  const ts::ImageTransform train(ts::ImageTransformKind::random_crop_flip, 16, 16, {});
  const ts::ImageTransform eval(ts::ImageTransformKind::centre_crop, 16, 16, {});
  std::vector<float> a(768), b(768), c(768);
  train.apply(im, 42, a.data());
  train.apply(im, 42, b.data());
  train.apply(im, 43, c.data());
  EXPECT_EQ(a, b);
  EXPECT_NE(a, c);
  eval.apply(im, 1, a.data());
  eval.apply(im, 2, b.data());
  EXPECT_EQ(a, b);
  EXPECT_THROW(ts::ImageTransform(ts::ImageTransformKind::resize, 0, 4, {}), ts::RuntimeError);
}

}  // namespace
