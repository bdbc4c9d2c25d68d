// Tests for the Loader: seeded per-epoch shuffle, per-step rank split, evaluation blocks, normalisation, determinism
// across thread counts, evaluation passes and the measured wait time.
#include <gtest/gtest.h>

#include <algorithm>
#include <cmath>
#include <set>
#include <vector>

#include "core/error.h"
#include "data/dataset.h"
#include "data/loader.h"

namespace {

// A float data set whose sample i is the single value i (label i % 10, target 2i), so a
// batch reveals which samples it holds.
ts::Dataset indexed_dataset(int64_t n) {
  ts::Dataset d;
  d.name = "indexed";
  d.sample = ts::Shape{1};
  d.count = n;
  d.classes = 10;
  for (int64_t i = 0; i < n; ++i) {
    d.values.push_back(static_cast<float>(i));
    d.labels.push_back(static_cast<int32_t>(i % 10));
    d.targets.push_back(static_cast<float>(2 * i));
  }
  return d;
}

// Sample ids of the next `batches` batches, checking labels and targets on the way.
std::vector<int64_t> take(ts::Loader& loader, int64_t batches, std::vector<int64_t>* epochs = nullptr) {
  std::vector<int64_t> ids;
  ts::Batch b;
  for (int64_t k = 0; k < batches; ++k) {
    EXPECT_TRUE(loader.next(b));
    for (int64_t i = 0; i < b.size; ++i) {
      int64_t id = static_cast<int64_t>(b.images[i]);
      ids.push_back(id);
      EXPECT_EQ(b.labels[i], id % 10);
      EXPECT_EQ(b.targets[i], static_cast<float>(2 * id));
      if (epochs) epochs->push_back(b.epoch);
    }
  }
  return ids;
}

}  // namespace

TEST(Loader, SameSeedSameOrder) {
  auto d = indexed_dataset(100);
  ts::LoaderOptions o;
  o.batch = 10;
  o.seed = 42;
  ts::Loader a(d, o), b(d, o);
  EXPECT_EQ(take(a, 25), take(b, 25));
  o.seed = 43;
  ts::Loader c(d, o);
  ts::Loader a2(d, {.batch = 10, .seed = 42});
  EXPECT_NE(take(a2, 10), take(c, 10));
}

TEST(Loader, EpochsArePermutationsAndDiffer) {
  auto d = indexed_dataset(100);
  ts::Loader loader(d, {.batch = 10, .seed = 7});
  EXPECT_EQ(loader.batches_per_epoch(), 10);
  std::vector<int64_t> epochs;
  auto ids = take(loader, 30, &epochs);
  std::vector<std::vector<int64_t>> per_epoch(3);
  for (size_t i = 0; i < ids.size(); ++i) {
    ASSERT_EQ(epochs[i], static_cast<int64_t>(i / 100));
    per_epoch[i / 100].push_back(ids[i]);
  }
  for (auto& e : per_epoch) {
    auto sorted = e;
    std::sort(sorted.begin(), sorted.end());
    for (int64_t i = 0; i < 100; ++i) ASSERT_EQ(sorted[static_cast<size_t>(i)], i);
  }
  EXPECT_NE(per_epoch[0], per_epoch[1]);
  EXPECT_NE(per_epoch[1], per_epoch[2]);
  std::vector<int64_t> identity(100);
  for (int64_t i = 0; i < 100; ++i) identity[static_cast<size_t>(i)] = i;
  EXPECT_NE(per_epoch[0], identity);
}

TEST(Loader, DropLastDropsPartialBatch) {
  auto d = indexed_dataset(25);
  ts::Loader loader(d, {.batch = 10, .shuffle = false});
  EXPECT_EQ(loader.batches_per_epoch(), 2);
  auto ids = take(loader, 3);  // epoch 0: 0..19, epoch 1: 0..9
  ASSERT_EQ(ids.size(), 30u);
  EXPECT_EQ(ids[19], 19);
  EXPECT_EQ(ids[20], 0);
}

TEST(Loader, RanksSplitEachGlobalStep) {
  auto d = indexed_dataset(103);
  const int world = 4;
  std::set<int64_t> all;
  std::vector<std::vector<int64_t>> per_rank;
  for (int r = 0; r < world; ++r) {
    ts::Loader loader(d, {.batch = 5, .seed = 3, .threads = 2, .rank = r, .world = world});
    EXPECT_EQ(loader.batches_per_epoch(), 5);  // 103 / (4 x 5) global steps
    per_rank.push_back(take(loader, 5));
    EXPECT_EQ(per_rank.back().size(), 25u);
    for (int64_t id : per_rank.back()) EXPECT_TRUE(all.insert(id).second) << "sample " << id << " twice";
  }
  EXPECT_EQ(all.size(), 100u);  // 3 samples dropped so every rank runs the same steps
  // Step k of a world-1 loader with batch 4 x 5 holds exactly the samples of step k of the
  // four ranks, rank by rank: N ranks x b see what 1 rank x N*b sees.
  ts::Loader single(d, {.batch = 20, .seed = 3});
  EXPECT_EQ(single.batches_per_epoch(), 5);
  for (int64_t step = 0; step < 5; ++step) {
    auto whole = take(single, 1);
    std::vector<int64_t> joined;
    for (int r = 0; r < world; ++r)
      joined.insert(joined.end(), per_rank[r].begin() + step * 5, per_rank[r].begin() + step * 5 + 5);
    EXPECT_EQ(joined, whole) << "global step " << step;
  }
}

TEST(Loader, EvaluationBlocksCoverEverySampleOnce) {
  auto d = indexed_dataset(10);
  std::vector<int64_t> joined;
  for (int r = 0; r < 3; ++r) {
    ts::Loader loader(d, {.batch = 2, .shuffle = false, .rank = r, .world = 3, .drop_last = false});
    ts::Batch b;
    while (loader.next(b))
      for (int64_t i = 0; i < b.size; ++i) joined.push_back(static_cast<int64_t>(b.images[i]));
  }
  ASSERT_EQ(joined.size(), 10u);  // blocks of 3, 3, 4: nothing dropped
  for (int64_t i = 0; i < 10; ++i) EXPECT_EQ(joined[i], i);
}

TEST(Loader, NormalisesPixelsPerChannel) {
  ts::Dataset d;
  d.name = "pixels";
  d.sample = ts::Shape{3, 2, 2};
  d.count = 4;
  d.classes = 10;
  for (int i = 0; i < 4 * 12; ++i) d.pixels.push_back(static_cast<uint8_t>(i * 5));
  d.labels = {0, 1, 2, 3};
  d.mean = {0.1f, 0.5f, 0.9f};
  d.stddev = {0.2f, 0.25f, 0.5f};
  ts::Loader loader(d, {.batch = 4, .shuffle = false});
  ts::Batch b;
  ASSERT_TRUE(loader.next(b));
  ASSERT_EQ(b.size, 4);
  EXPECT_EQ(b.targets, nullptr);
  for (int s = 0; s < 4; ++s)
    for (int c = 0; c < 3; ++c)
      for (int i = 0; i < 4; ++i) {
        int idx = s * 12 + c * 4 + i;
        float expect = (static_cast<float>(idx * 5) / 255.0f - d.mean[static_cast<size_t>(c)]) /
                       d.stddev[static_cast<size_t>(c)];
        EXPECT_NEAR(b.images[idx], expect, 1e-6f) << "sample " << s << " channel " << c;
      }
}

TEST(Loader, SingleMeanAppliesToAllChannelsAndNoneMeansScaleOnly) {
  ts::Dataset d;
  d.name = "pixels";
  d.sample = ts::Shape{1, 1, 2};
  d.count = 1;
  d.pixels = {0, 255};
  ts::Loader plain(d, {.batch = 1, .shuffle = false});
  ts::Batch b;
  ASSERT_TRUE(plain.next(b));
  EXPECT_FLOAT_EQ(b.images[0], 0.0f);
  EXPECT_FLOAT_EQ(b.images[1], 1.0f);
  EXPECT_EQ(b.labels, nullptr);
  d.mean = {0.2860f};
  d.stddev = {0.3530f};
  ts::Loader norm(d, {.batch = 1, .shuffle = false});
  ASSERT_TRUE(norm.next(b));
  EXPECT_NEAR(b.images[0], -0.2860f / 0.3530f, 1e-6f);
  EXPECT_NEAR(b.images[1], (1.0f - 0.2860f) / 0.3530f, 1e-6f);
}

TEST(Loader, DeterministicAcrossThreadCounts) {
  auto d = ts::make_synthetic_dataset(ts::Shape{2, 3, 3}, 10, 257, 9);
  auto run = [&](int threads, int prefetch) {
    ts::Loader loader(d, {.batch = 16, .seed = 5, .threads = threads, .prefetch = prefetch});
    std::vector<float> seen;
    ts::Batch b;
    for (int k = 0; k < 40; ++k) {  // 2.5 epochs of 16 batches
      EXPECT_TRUE(loader.next(b));
      seen.insert(seen.end(), b.images, b.images + b.size * 18);
      for (int64_t i = 0; i < b.size; ++i) seen.push_back(static_cast<float>(b.labels[i]));
      seen.push_back(static_cast<float>(b.epoch));
    }
    return seen;
  };
  auto one = run(1, 1);
  EXPECT_EQ(one, run(3, 2));
  EXPECT_EQ(one, run(3, 6));
}

TEST(Loader, EvalPassReturnsPartialBatchThenFalse) {
  auto d = indexed_dataset(10);
  ts::Loader loader(d, {.batch = 4, .shuffle = false, .threads = 2, .drop_last = false});
  EXPECT_EQ(loader.batches_per_epoch(), 3);
  for (int pass = 0; pass < 3; ++pass) {
    ts::Batch b;
    std::vector<int64_t> sizes, ids;
    while (loader.next(b)) {
      sizes.push_back(b.size);
      for (int64_t i = 0; i < b.size; ++i) ids.push_back(static_cast<int64_t>(b.images[i]));
    }
    EXPECT_EQ(sizes, (std::vector<int64_t>{4, 4, 2})) << "pass " << pass;
    ASSERT_EQ(ids.size(), 10u);
    for (int64_t i = 0; i < 10; ++i) EXPECT_EQ(ids[static_cast<size_t>(i)], i);
  }
}

TEST(Loader, WaitTimeRecorded) {
  auto d = indexed_dataset(64);
  ts::Loader loader(d, {.batch = 8});
  ts::Batch b;
  double total = 0;
  for (int k = 0; k < 20; ++k) {
    ASSERT_TRUE(loader.next(b));
    double w = loader.last_wait_seconds();
    EXPECT_GE(w, 0.0);
    EXPECT_LT(w, 10.0);
    total += w;
  }
  EXPECT_GE(total, 0.0);
}

TEST(Loader, ShutdownWithFullRingAndMidEpoch) {
  auto d = ts::make_synthetic_dataset(ts::Shape{1, 8, 8}, 10, 1000, 1);
  for (int k = 0; k < 20; ++k) {
    ts::Loader loader(d, {.batch = 7, .threads = 4, .prefetch = 3});
    ts::Batch b;
    for (int j = 0; j < k; ++j) ASSERT_TRUE(loader.next(b));
  }  // destructors must join without deadlock
}

TEST(Loader, RejectsBadOptions) {
  auto d = indexed_dataset(10);
  EXPECT_THROW(ts::Loader(d, {.batch = 0}), ts::ConfigError);
  EXPECT_THROW(ts::Loader(d, {.batch = 11}), ts::ConfigError);  // no full batch per epoch
  EXPECT_THROW(ts::Loader(d, {.batch = 2, .rank = 2, .world = 2}), ts::ConfigError);
  EXPECT_THROW(ts::Loader(d, {.batch = 3, .rank = 1, .world = 4}), ts::ConfigError);  // 4 x 3 > 10
  EXPECT_THROW(ts::Loader(d, {.batch = 2, .threads = 0}), ts::ConfigError);
}

TEST(Loader, NeuronAndSyntheticDatasets) {
  auto n = ts::make_neuron_dataset(1000, 3);
  EXPECT_EQ(n.classes, 0);
  EXPECT_EQ(n.sample, (ts::Shape{1}));
  ASSERT_EQ(n.values.size(), 1000u);
  ASSERT_EQ(n.targets.size(), 1000u);
  int ones = 0;
  for (size_t i = 0; i < 1000; ++i) {
    EXPECT_GE(n.values[i], 0.0f);
    EXPECT_LT(n.values[i], 1.0f);
    EXPECT_EQ(n.targets[i], n.values[i] >= 0.5f ? 1.0f : 0.0f);
    ones += n.targets[i] > 0.5f;
  }
  EXPECT_GT(ones, 400);
  EXPECT_LT(ones, 600);
  ts::Loader loader(n, {.batch = 32});
  ts::Batch b;
  ASSERT_TRUE(loader.next(b));
  EXPECT_EQ(b.labels, nullptr);
  ASSERT_NE(b.targets, nullptr);
  for (int i = 0; i < 32; ++i) EXPECT_EQ(b.targets[i], b.images[i] >= 0.5f ? 1.0f : 0.0f);

  auto s1 = ts::make_synthetic_dataset(ts::Shape{3, 4, 4}, 10, 50, 11);
  auto s2 = ts::make_synthetic_dataset(ts::Shape{3, 4, 4}, 10, 50, 11);
  EXPECT_EQ(s1.values, s2.values);
  EXPECT_EQ(s1.labels, s2.labels);
  EXPECT_EQ(s1.values.size(), 50u * 48u);
  for (int32_t l : s1.labels) {
    EXPECT_GE(l, 0);
    EXPECT_LT(l, 10);
  }
}
