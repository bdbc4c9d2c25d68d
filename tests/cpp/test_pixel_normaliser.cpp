// Tests for PixelNormaliser: per-channel statistics, one shared statistic, none (scale to
// [0,1] only), and statistics that do not fit the channels.
#include <gtest/gtest.h>

#include <cstdint>
#include <vector>

#include "core/error.h"
#include "data/pixel_normaliser.h"

TEST(PixelNormaliser, PerChannel) {
  const ts::Normalisation stats{{0.1f, 0.5f, 0.9f}, {0.2f, 0.25f, 0.5f}};
  ts::PixelNormaliser norm(stats, 3, 4);
  std::vector<uint8_t> src(12);
  for (int i = 0; i < 12; ++i) src[static_cast<size_t>(i)] = static_cast<uint8_t>(i * 20);
  std::vector<float> dst(12);
  norm.apply(src.data(), dst.data());
  for (int c = 0; c < 3; ++c)
    for (int i = 0; i < 4; ++i) {
      const int k = c * 4 + i;
      EXPECT_NEAR(dst[static_cast<size_t>(k)],
                  (static_cast<float>(k * 20) / 255.0f - stats.mean[static_cast<size_t>(c)]) /
                      stats.stddev[static_cast<size_t>(c)],
                  1e-6f)
          << "channel " << c;
    }
}

TEST(PixelNormaliser, OneStatisticForAllChannelsAndNoneScalesOnly) {
  const std::vector<uint8_t> src = {0, 255};
  std::vector<float> dst(2);
  ts::PixelNormaliser({}, 1, 2).apply(src.data(), dst.data());
  EXPECT_FLOAT_EQ(dst[0], 0.0f);
  EXPECT_FLOAT_EQ(dst[1], 1.0f);
  ts::PixelNormaliser({{0.2860f}, {0.3530f}}, 2, 1).apply(src.data(), dst.data());
  EXPECT_NEAR(dst[0], -0.2860f / 0.3530f, 1e-6f);
  EXPECT_NEAR(dst[1], (1.0f - 0.2860f) / 0.3530f, 1e-6f);
}

TEST(PixelNormaliser, StatisticsMustFitTheChannels) {
  EXPECT_THROW(ts::PixelNormaliser({{0.1f, 0.2f}, {1.0f, 1.0f}}, 3, 4), ts::RuntimeError);
  EXPECT_THROW(ts::PixelNormaliser({{0.1f}, {}}, 1, 4), ts::RuntimeError);
}
