// Tests for the Loader over sample sources: seeded per-epoch shuffle, per-step rank split,
// evaluation blocks, determinism across thread counts, evaluation passes, reads inside the
// loader (bounded by the ring, never the whole split up front), the sequential-read hint, the
// slot allocator, read errors and the measured wait time.
#include <gtest/gtest.h>

#include <algorithm>
#include <atomic>
#include <chrono>
#include <cmath>
#include <cstdlib>
#include <mutex>
#include <set>
#include <thread>
#include <vector>

#include "core/error.h"
#include "data/loader.h"
#include "data/synthetic_source.h"

namespace {

// Sample i is the single value i with label i % 10 (classification) or target 2i
// (regression), so a batch reveals which samples it holds. Counts its reads, records their
// order, and can fail one index.
class IndexedSource final : public ts::SampleSource {
 public:
  explicit IndexedSource(int64_t n, bool regression = false, bool sequential = false)
      : n_(n), sequential_(sequential), spec_{ts::Shape{1}, regression ? 0 : 10, regression ? 1 : 0} {}
  const ts::SampleSpec& spec() const override { return spec_; }
  int64_t count() const override { return n_; }
  std::string describe() const override { return "indexed, " + std::to_string(n_) + " samples"; }
  bool prefers_sequential() const override { return sequential_; }
  void read(int64_t index, float* image, int32_t* label, float* targets) const override {
    if (index == fail_at) throw ts::RuntimeError("data file indexed.bin: cannot read sample " + std::to_string(index));
    {
      std::lock_guard<std::mutex> lock(mutex_);
      order_.push_back(index);
    }
    image[0] = static_cast<float>(index);
    if (spec_.classes > 0) *label = static_cast<int32_t>(index % 10);
    else targets[0] = static_cast<float>(2 * index);
  }
  int64_t reads() const {
    std::lock_guard<std::mutex> lock(mutex_);
    return static_cast<int64_t>(order_.size());
  }
  std::vector<int64_t> read_order() const {
    std::lock_guard<std::mutex> lock(mutex_);
    return order_;
  }
  int64_t fail_at = -1;

 private:
  int64_t n_;
  bool sequential_;
  ts::SampleSpec spec_;
  mutable std::mutex mutex_;
  mutable std::vector<int64_t> order_;
};

// Sample ids of the next `batches` batches, checking labels or targets on the way.
std::vector<int64_t> take(ts::Loader& loader, int64_t batches, std::vector<int64_t>* epochs = nullptr) {
  std::vector<int64_t> ids;
  ts::Batch b;
  for (int64_t k = 0; k < batches; ++k) {
    EXPECT_TRUE(loader.next(b));
    for (int64_t i = 0; i < b.size; ++i) {
      int64_t id = static_cast<int64_t>(b.images[i]);
      ids.push_back(id);
      if (b.labels) EXPECT_EQ(b.labels[i], id % 10);
      if (b.targets) EXPECT_EQ(b.targets[i], static_cast<float>(2 * id));
      EXPECT_NE(b.labels == nullptr, b.targets == nullptr);
      if (epochs) epochs->push_back(b.epoch);
    }
  }
  return ids;
}

}  // namespace

TEST(Loader, SameSeedSameOrder) {
  IndexedSource d(100);
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
  IndexedSource d(100);
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
  IndexedSource d(25);
  ts::Loader loader(d, {.batch = 10, .shuffle = false});
  EXPECT_EQ(loader.batches_per_epoch(), 2);
  auto ids = take(loader, 3);  // epoch 0: 0..19, epoch 1: 0..9
  ASSERT_EQ(ids.size(), 30u);
  EXPECT_EQ(ids[19], 19);
  EXPECT_EQ(ids[20], 0);
}

TEST(Loader, RanksSplitEachGlobalStep) {
  IndexedSource d(103);
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

// Unequal shares (docs/heterogeneous.md): rank r takes [offset_r,
// offset_r + share_r) of each global batch, so ranks with shares 12 + 4 see what 1 rank x 16 sees.
TEST(Loader, SharesSplitEachGlobalStepByPrefixSums) {
  IndexedSource d(100);
  ts::Loader big(d, {.batch = 12, .seed = 3, .threads = 2, .rank = 0, .world = 2, .global_batch = 16, .share_offset = 0});
  ts::Loader small(d, {.batch = 4, .seed = 3, .rank = 1, .world = 2, .global_batch = 16, .share_offset = 12});
  ts::Loader single(d, {.batch = 16, .seed = 3});
  EXPECT_EQ(big.batches_per_epoch(), 6);
  EXPECT_EQ(small.batches_per_epoch(), 6);
  for (int64_t step = 0; step < 8; ++step) {  // into the second epoch
    std::vector<int64_t> joined = take(big, 1);
    const std::vector<int64_t> rest = take(small, 1);
    joined.insert(joined.end(), rest.begin(), rest.end());
    EXPECT_EQ(joined, take(single, 1)) << "global step " << step;
  }
  EXPECT_THROW(ts::Loader(d, {.batch = 8, .rank = 1, .world = 2, .global_batch = 16, .share_offset = 12}), ts::ConfigError);
}

// A share change applies from the batch it names, on a loader whose workers read ahead: the
// batches before it keep the old share, those after take the new one (slots sized max_batch).
TEST(Loader, ShareChangesApplyFromTheNamedBatch) {
  IndexedSource d(160);
  const ts::LoaderOptions base{.batch = 8, .seed = 5, .threads = 2, .prefetch = 2, .rank = 0, .world = 2,
                               .global_batch = 16, .share_offset = 0, .max_batch = 14};
  ts::Loader rank0(d, base);
  ts::LoaderOptions o1 = base;
  o1.rank = 1;
  o1.share_offset = 8;
  ts::Loader rank1(d, o1);
  ts::Loader single(d, {.batch = 16, .seed = 5});
  ts::Batch b;
  for (int64_t step = 0; step < 3; ++step) {
    std::vector<int64_t> joined = take(rank0, 1), rest = take(rank1, 1);
    joined.insert(joined.end(), rest.begin(), rest.end());
    EXPECT_EQ(joined, take(single, 1));
  }
  // A batch already handed out (its worker claimed it): too late, whatever the workers do now.
  EXPECT_THROW(rank0.set_share(14, 0, rank0.position() - 1), ts::ConfigError) << "already claimed";
  EXPECT_THROW(rank0.set_share(15, 0, 100), ts::ConfigError) << "larger than the slots";
  const int64_t from = rank0.position() + 2 + 1;  // position + prefetch + 1: never claimed
  rank0.set_share(14, 0, from);
  rank1.set_share(2, 14, from);
  for (int64_t seq = rank0.position(); seq < from + 4; ++seq) {
    const std::vector<int64_t> a = take(rank0, 1), c = take(rank1, 1);
    EXPECT_EQ(a.size(), seq < from ? 8u : 14u) << "batch " << seq;
    std::vector<int64_t> joined = a;
    joined.insert(joined.end(), c.begin(), c.end());
    EXPECT_EQ(joined, take(single, 1)) << "batch " << seq;
  }
}

// A resumed run's loader starts at its checkpoint's batch with the share in force there and the
// decided change still to come (LoaderOptions::later_shares): it hands out what the loader of
// the uninterrupted run did, batch for batch, the change included.
TEST(Loader, LaterSharesOfAResumedRunApplyFromTheirBatch) {
  IndexedSource d(160);
  const ts::LoaderOptions base{.batch = 8, .seed = 5, .threads = 2, .prefetch = 2, .rank = 0, .world = 2,
                               .global_batch = 16, .share_offset = 0, .max_batch = 14};
  ts::Loader uninterrupted(d, base);
  uninterrupted.set_share(14, 0, 5);
  ts::LoaderOptions resumed = base;
  resumed.first_batch = 3;
  resumed.later_shares = {{5, 14, 0}};
  ts::Loader loader(d, resumed);
  take(uninterrupted, 3);
  for (int64_t seq = 3; seq < 9; ++seq) {
    const std::vector<int64_t> a = take(uninterrupted, 1), b = take(loader, 1);
    EXPECT_EQ(b.size(), seq < 5 ? 8u : 14u) << "batch " << seq;
    EXPECT_EQ(a, b) << "batch " << seq;
  }
  ts::LoaderOptions bad = resumed;
  bad.later_shares = {{2, 14, 0}};  // before the first batch: not a later share
  EXPECT_THROW(ts::Loader(d, bad), ts::ConfigError);
  bad.later_shares = {{5, 14, 4}};  // past the global batch
  EXPECT_THROW(ts::Loader(d, bad), ts::ConfigError);
}

TEST(Loader, EvaluationBlocksCoverEverySampleOnce) {
  IndexedSource d(10);
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

TEST(Loader, DeterministicAcrossThreadCounts) {
  auto d = ts::make_synthetic_source({ts::Shape{2, 3, 3}, 10, 0}, 257, 9);
  auto run = [&](int threads, int prefetch) {
    ts::Loader loader(*d, {.batch = 16, .seed = 5, .threads = threads, .prefetch = prefetch});
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

// A resumed run's loader (first_batch = the steps taken) hands out exactly the batches the
// uninterrupted loader hands out from there on, across an epoch boundary, on every rank and
// with any number of read-ahead threads; position() is what a checkpoint records.
TEST(Loader, FirstBatchContinuesTheSequenceExactly) {
  IndexedSource d(103);
  for (int rank = 0; rank < 2; ++rank) {
    ts::Loader whole(d, {.batch = 5, .seed = 7, .threads = 1, .prefetch = 1, .rank = rank, .world = 2});
    EXPECT_EQ(whole.position(), 0);
    take(whole, 13);  // 10 batches per epoch: into the second epoch
    EXPECT_EQ(whole.position(), 13);
    std::vector<int64_t> epochs_whole, epochs_resumed;
    const auto rest = take(whole, 15, &epochs_whole);
    for (int threads : {1, 3}) {
      ts::Loader resumed(d, {.batch = 5, .seed = 7, .threads = threads, .prefetch = 4, .rank = rank, .world = 2,
                             .first_batch = 13});
      EXPECT_EQ(resumed.position(), 13);
      epochs_resumed.clear();
      EXPECT_EQ(take(resumed, 15, &epochs_resumed), rest) << "rank " << rank << ", " << threads << " thread(s)";
      EXPECT_EQ(epochs_resumed, epochs_whole);
      EXPECT_EQ(resumed.position(), 28);
    }
  }
  EXPECT_THROW(ts::Loader(d, {.batch = 2, .first_batch = -1}), ts::ConfigError);
  EXPECT_THROW(ts::Loader(d, {.batch = 2, .drop_last = false, .first_batch = 3}), ts::ConfigError);
}

TEST(Loader, EvalPassReturnsPartialBatchThenFalse) {
  IndexedSource d(10);
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
  IndexedSource d(64);
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
  auto d = ts::make_synthetic_source({ts::Shape{1, 8, 8}, 10, 0}, 1000, 1);
  for (int k = 0; k < 20; ++k) {
    ts::Loader loader(*d, {.batch = 7, .threads = 4, .prefetch = 3});
    ts::Batch b;
    for (int j = 0; j < k; ++j) ASSERT_TRUE(loader.next(b));
  }  // destructors must join without deadlock
}

TEST(Loader, RejectsBadOptions) {
  IndexedSource d(10);
  EXPECT_THROW(ts::Loader(d, {.batch = 0}), ts::ConfigError);
  EXPECT_THROW(ts::Loader(d, {.batch = 11}), ts::ConfigError);  // no full batch per epoch
  EXPECT_THROW(ts::Loader(d, {.batch = 2, .rank = 2, .world = 2}), ts::ConfigError);
  EXPECT_THROW(ts::Loader(d, {.batch = 3, .rank = 1, .world = 4}), ts::ConfigError);  // 4 x 3 > 10
  EXPECT_THROW(ts::Loader(d, {.batch = 2, .threads = 0}), ts::ConfigError);
}

TEST(Loader, RegressionTargetsAndNeuronSource) {
  IndexedSource d(50, /*regression=*/true);
  ts::Loader loader(d, {.batch = 10, .seed = 2});
  EXPECT_EQ(take(loader, 5).size(), 50u);  // take() checks every target is 2 x the sample
  auto n = ts::make_neuron_source(1000, 3);
  ts::Loader neuron(*n, {.batch = 32});
  ts::Batch b;
  ASSERT_TRUE(neuron.next(b));
  EXPECT_EQ(b.labels, nullptr);
  ASSERT_NE(b.targets, nullptr);
  for (int i = 0; i < 32; ++i) EXPECT_EQ(b.targets[i], b.images[i] >= 0.5f ? 1.0f : 0.0f);
}

TEST(Loader, ReadsOnlyWhatTheRingHolds) {
  // The source is read by the workers as batches are needed, never as a whole split up front:
  // after k batches consumed, at most k + prefetch batches have been read.
  IndexedSource d(10000);
  ts::Loader loader(d, {.batch = 10, .threads = 2, .prefetch = 3});
  ts::Batch b;
  for (int k = 1; k <= 5; ++k) {
    ASSERT_TRUE(loader.next(b));
    EXPECT_LE(d.reads(), (k + 3) * 10) << "after " << k << " batches";
  }
  EXPECT_GE(d.reads(), 50);
}

TEST(Loader, SequentialHintSortsReadsWithinABatch) {
  IndexedSource plain(200), sequential(200, false, /*sequential=*/true);
  ts::Loader a(plain, {.batch = 20, .seed = 8}), b(sequential, {.batch = 20, .seed = 8});
  EXPECT_EQ(take(a, 10), take(b, 10));  // the same batches, sample for sample
  const auto order = sequential.read_order();  // one worker: batches are read one after the other
  ASSERT_GE(order.size(), 200u);
  for (size_t batch = 0; batch < 10; ++batch)
    EXPECT_TRUE(std::is_sorted(order.begin() + static_cast<long>(batch * 20), order.begin() + static_cast<long>(batch * 20 + 20)))
        << "batch " << batch;
  const auto shuffled = plain.read_order();
  EXPECT_FALSE(std::is_sorted(shuffled.begin(), shuffled.begin() + 20));
}

TEST(Loader, SlotsComeFromTheAllocator) {
  struct Block {
    const char* begin;
    size_t bytes;
  };
  std::vector<Block> blocks;
  auto released = std::make_shared<std::atomic<int>>(0);
  ts::SlotAllocator allocate = [&blocks, released](size_t bytes) {
    void* p = std::malloc(bytes);
    blocks.push_back({static_cast<const char*>(p), bytes});
    return std::shared_ptr<void>(p, [released](void* q) {
      std::free(q);
      ++*released;
    });
  };
  IndexedSource d(100);
  {
    ts::Loader loader(d, {.batch = 10, .prefetch = 2, .allocate = allocate});
    EXPECT_EQ(blocks.size(), 6u);  // 3 slots x (images, labels); no targets for a classifier
    auto inside = [&](const void* p, size_t bytes) {
      for (const Block& blk : blocks)
        if (static_cast<const char*>(p) >= blk.begin && static_cast<const char*>(p) + bytes <= blk.begin + blk.bytes) return true;
      return false;
    };
    ts::Batch b;
    for (int k = 0; k < 12; ++k) {
      ASSERT_TRUE(loader.next(b));
      EXPECT_TRUE(inside(b.images, 10 * sizeof(float)));
      EXPECT_TRUE(inside(b.labels, 10 * sizeof(int32_t)));
    }
    EXPECT_EQ(released->load(), 0);
  }
  EXPECT_EQ(released->load(), 6);
  EXPECT_THROW(ts::Loader(d, {.batch = 10, .allocate = [](size_t) { return std::shared_ptr<void>(); }}),
               ts::RuntimeError);
}

TEST(Loader, ReadErrorReachesNext) {
  IndexedSource d(40);
  d.fail_at = 25;
  ts::Loader loader(d, {.batch = 10, .shuffle = false, .threads = 2});
  ts::Batch b;
  ASSERT_TRUE(loader.next(b));
  ASSERT_TRUE(loader.next(b));
  try {
    loader.next(b);
    FAIL() << "expected the read error of sample 25";
  } catch (const ts::RuntimeError& e) {
    EXPECT_NE(std::string(e.what()).find("indexed.bin"), std::string::npos) << e.what();
  }
}

TEST(Loader, EvaluationReadsStartWithThePass) {
  IndexedSource d(10);
  ts::Loader loader(d, {.batch = 4, .shuffle = false, .threads = 2, .drop_last = false});
  // Nothing is read before the pass starts (the pause gives wrongly eager workers time to show).
  std::this_thread::sleep_for(std::chrono::milliseconds(20));
  EXPECT_EQ(d.reads(), 0);
  ts::Batch b;
  std::vector<int64_t> sizes;
  while (loader.next(b)) sizes.push_back(b.size);
  EXPECT_EQ(sizes, (std::vector<int64_t>{4, 4, 2}));
  EXPECT_EQ(b.size, 0);
  std::this_thread::sleep_for(std::chrono::milliseconds(20));
  EXPECT_EQ(d.reads(), 10);  // and the next pass waits for its first next()
}

TEST(Loader, RowsPastAPartialBatchAreZero) {
  IndexedSource d(11);
  // Two slots: every partial batch lands in a slot that held a full batch before.
  ts::Loader loader(d, {.batch = 4, .shuffle = false, .prefetch = 1, .drop_last = false});
  ts::Batch b;
  for (int pass = 0; pass < 2; ++pass) {
    while (loader.next(b)) {
      if (b.size < 4) {
        EXPECT_EQ(b.size, 3);
        EXPECT_EQ(b.images[2], 10.0f);
        EXPECT_EQ(b.images[3], 0.0f);
        EXPECT_EQ(b.labels[3], 0);
      }
    }
  }
}
