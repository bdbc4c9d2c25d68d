// Tests for the generated sources: a sample depends on (seed, index) only (same bytes in any
// read order and from any thread), seeds and indices change it, values have mean 0 and
// variance 1, labels lie in range, regression targets, the neuron task, and bad arguments.
#include <gtest/gtest.h>

#include <cmath>
#include <thread>
#include <vector>

#include "core/error.h"
#include "data/synthetic_source.h"

namespace {

struct Sample {
  std::vector<float> image;
  int32_t label = -1;
  std::vector<float> targets;
};

Sample read(const ts::SampleSource& s, int64_t index) {
  Sample out;
  out.image.resize(static_cast<size_t>(s.spec().sample.numel()));
  out.targets.resize(static_cast<size_t>(s.spec().outputs));
  s.read(index, out.image.data(), &out.label, out.targets.data());
  return out;
}

bool same(const Sample& a, const Sample& b) {
  return a.image == b.image && a.label == b.label && a.targets == b.targets;
}

const ts::SampleSpec kImages{ts::Shape{3, 4, 4}, 10, 0};

}  // namespace

TEST(SyntheticSource, SameSeedAndIndexSameBytesInAnyOrder) {
  auto a = ts::make_synthetic_source(kImages, 50, 11);
  auto b = ts::make_synthetic_source(kImages, 50, 11);
  EXPECT_EQ(a->count(), 50);
  EXPECT_EQ(a->spec().sample, kImages.sample);
  std::vector<Sample> forward, backward(50);
  for (int64_t i = 0; i < 50; ++i) forward.push_back(read(*a, i));
  for (int64_t i = 49; i >= 0; --i) backward[static_cast<size_t>(i)] = read(*b, i);
  for (size_t i = 0; i < 50; ++i) EXPECT_TRUE(same(forward[i], backward[i])) << "sample " << i;
  EXPECT_TRUE(same(read(*a, 7), forward[7]));  // reading again changes nothing
}

TEST(SyntheticSource, ThreadsReadTheSameBytes) {
  auto s = ts::make_synthetic_source(kImages, 64, 3);
  std::vector<std::vector<Sample>> per_thread(3);
  std::vector<std::thread> threads;
  for (size_t t = 0; t < per_thread.size(); ++t)
    threads.emplace_back([&, t] {
      for (int64_t i = 0; i < 64; ++i) per_thread[t].push_back(read(*s, (i * 5 + static_cast<int64_t>(t)) % 64));
    });
  for (auto& t : threads) t.join();
  for (size_t t = 0; t < per_thread.size(); ++t)
    for (int64_t i = 0; i < 64; ++i)
      EXPECT_TRUE(same(per_thread[t][static_cast<size_t>(i)], read(*s, (i * 5 + static_cast<int64_t>(t)) % 64)));
}

TEST(SyntheticSource, SeedAndIndexChangeTheSample) {
  auto a = ts::make_synthetic_source(kImages, 50, 11);
  auto c = ts::make_synthetic_source(kImages, 50, 12);
  EXPECT_NE(read(*a, 3).image, read(*c, 3).image);
  EXPECT_NE(read(*a, 3).image, read(*a, 4).image);
}

TEST(SyntheticSource, UnitVarianceValuesAndLabelsInRange) {
  auto s = ts::make_synthetic_source({ts::Shape{1, 32, 32}, 7, 0}, 200, 5);
  double sum = 0, squares = 0;
  std::vector<int> per_class(7, 0);
  for (int64_t i = 0; i < 200; ++i) {
    Sample x = read(*s, i);
    for (float v : x.image) {
      sum += v;
      squares += static_cast<double>(v) * v;
    }
    ASSERT_GE(x.label, 0);
    ASSERT_LT(x.label, 7);
    per_class[static_cast<size_t>(x.label)]++;
  }
  const double n = 200.0 * 1024.0, mean = sum / n;
  EXPECT_NEAR(mean, 0.0, 0.01);
  EXPECT_NEAR(squares / n - mean * mean, 1.0, 0.01);
  for (int c : per_class) EXPECT_GT(c, 10);  // every class occurs
}

TEST(SyntheticSource, RegressionTargets) {
  auto s = ts::make_synthetic_source({ts::Shape{5}, 0, 3}, 20, 1);
  for (int64_t i = 0; i < 20; ++i) {
    Sample x = read(*s, i);
    EXPECT_EQ(x.label, -1);  // untouched without classes
    for (float t : x.targets) {
      EXPECT_GE(t, 0.0f);
      EXPECT_LT(t, 1.0f);
    }
  }
}

TEST(SyntheticSource, RejectsBadArguments) {
  EXPECT_THROW(ts::make_synthetic_source(kImages, 0, 1), ts::ConfigError);
  EXPECT_THROW(ts::make_synthetic_source({ts::Shape{}, 10, 0}, 5, 1), ts::ConfigError);
  EXPECT_THROW(ts::make_synthetic_source({ts::Shape{3}, 0, 0}, 5, 1), ts::ConfigError);
  EXPECT_THROW(ts::make_neuron_source(0, 1), ts::ConfigError);
}

TEST(NeuronSource, TargetIsTheThreshold) {
  auto s = ts::make_neuron_source(1000, 3);
  EXPECT_EQ(s->spec().sample, (ts::Shape{1}));
  EXPECT_EQ(s->spec().classes, 0);
  EXPECT_EQ(s->spec().outputs, 1);
  int ones = 0;
  for (int64_t i = 0; i < 1000; ++i) {
    Sample x = read(*s, i);
    EXPECT_GE(x.image[0], 0.0f);
    EXPECT_LT(x.image[0], 1.0f);
    EXPECT_EQ(x.targets[0], x.image[0] >= 0.5f ? 1.0f : 0.0f);
    ones += x.targets[0] > 0.5f;
  }
  EXPECT_GT(ones, 400);
  EXPECT_LT(ones, 600);
  EXPECT_TRUE(same(read(*s, 17), read(*ts::make_neuron_source(1000, 3), 17)));
}
