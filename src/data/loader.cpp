// Loader: turns an in-memory Dataset into batches, prepared ahead by worker threads.
//
// Batches form one sequence, numbered 0, 1, 2, ...; batch `seq` belongs to epoch
// seq / batches_per_epoch and its contents depend only on (seed, epoch, rank, seq), never on
// which worker filled it, so results are identical for any thread count.
//
// Rank split. Training (drop_last): global step k of an epoch takes the k-th block of
// world * batch samples of the epoch's shuffled order, and rank r takes the r-th batch-sized
// slice of that block. So N ranks x batch b see, step for step, exactly the samples that
// 1 rank x batch N*b sees (the data-parallel equivalence, docs/distributed.md). Evaluation
// (!drop_last): rank r takes the contiguous block [r*n/world, (r+1)*n/world) of the order, so
// the ranks together cover every sample exactly once. A worker claims the
// next number only when its ring slot (seq % slots) is free; next() hands slots out strictly in
// order. The slot handed to the trainer stays untouched until the following next() call, so
// the ring has prefetch + 1 slots: `prefetch` being filled ahead plus the one in use.
#include "data/loader.h"

#include <algorithm>
#include <condition_variable>
#include <exception>
#include <limits>
#include <map>
#include <mutex>
#include <thread>
#include <vector>

#include "core/buffer.h"
#include "core/error.h"
#include "core/rng.h"
#include "core/timer.h"

namespace ts {

namespace {

enum class SlotState { free, filling, ready, in_use };

struct Slot {
  SlotState state = SlotState::free;
  int64_t seq = -1;
  int64_t size = 0;
  int64_t epoch = 0;
  Buffer<float> images;    // (batch, sample)
  Buffer<int32_t> labels;  // (batch)
  Buffer<float> targets;   // (batch, outputs)
  std::exception_ptr error;
};

}  // namespace

struct Loader::Impl {
  const Dataset& data;
  LoaderOptions opt;
  int64_t sample_numel = 0;
  int64_t outputs = 0;          // targets per sample (0 = none)
  int64_t shard_begin = 0;      // evaluation: this rank's block [shard_begin, shard_end)
  int64_t shard_end = 0;
  int64_t batches_per_epoch = 0;
  bool eval_mode = false;       // one pass, then false, then restart
  // Pixel -> float lookup per channel: lut[c * 256 + p] = (p/255 - mean[c]) / std[c].
  std::vector<float> lut;
  int64_t channels = 1, plane = 1;  // sample = (channels, plane) for normalisation

  std::vector<Slot> slots;
  std::vector<std::thread> workers;
  std::mutex mutex;
  std::condition_variable work_cv;   // workers wait for a free slot / a larger limit / stop
  std::condition_variable ready_cv;  // next() waits for its slot to become ready
  bool stop = false;
  int64_t next_claim = 0;          // next sequence number a worker will fill
  int64_t limit = 0;               // workers fill seq < limit (eval: end of the current pass)
  int64_t next_consume = 0;        // next sequence number next() returns
  int64_t held = -1;               // slot index handed to the trainer, or -1
  int64_t pos_in_pass = 0;         // eval: batches returned in the current pass
  bool pass_open = true;           // eval: the current pass's batches may be prefetched
  double last_wait = 0.0;
  // Epoch orders (shared with workers; old epochs are pruned).
  std::map<int64_t, std::shared_ptr<const std::vector<int64_t>>> orders;

  Impl(const Dataset& d, LoaderOptions o) : data(d), opt(o) {}

  // The whole epoch order (the same on every rank); ranks pick their samples in fill().
  std::shared_ptr<const std::vector<int64_t>> order_for(int64_t epoch) {
    std::lock_guard<std::mutex> lock(mutex);
    auto it = orders.find(epoch);
    if (it != orders.end()) return it->second;
    std::vector<int64_t> perm(static_cast<size_t>(data.count));
    for (int64_t i = 0; i < data.count; ++i) perm[static_cast<size_t>(i)] = i;
    if (opt.shuffle) {
      // Fisher-Yates from (seed, epoch): every rank computes the same epoch order.
      Rng rng(seed_mix(opt.seed, static_cast<uint64_t>(epoch), 0x5a4ff1e));
      for (int64_t i = data.count - 1; i > 0; --i) {
        int64_t j = static_cast<int64_t>(rng.below(static_cast<uint64_t>(i + 1)));
        std::swap(perm[static_cast<size_t>(i)], perm[static_cast<size_t>(j)]);
      }
    }
    auto order = std::make_shared<const std::vector<int64_t>>(std::move(perm));
    // Workers only ever need epochs near the consumer's; keep the two newest.
    while (orders.size() >= 2) orders.erase(orders.begin());
    orders.emplace(epoch, order);
    return order;
  }

  void fill(Slot& slot, int64_t seq) {
    const int64_t epoch = seq / batches_per_epoch;
    const int64_t index = seq % batches_per_epoch;
    // Training: rank's slice of global step `index`; evaluation: next piece of the rank's block.
    const int64_t start = eval_mode ? shard_begin + index * opt.batch
                                    : (index * opt.world + opt.rank) * opt.batch;
    const int64_t size = eval_mode ? std::min(opt.batch, shard_end - start) : opt.batch;
    auto order = order_for(epoch);
    slot.epoch = epoch;
    slot.size = size;
    for (int64_t b = 0; b < size; ++b) {
      const int64_t s = (*order)[static_cast<size_t>(start + b)];
      float* dst = slot.images.data() + b * sample_numel;  // (sample)
      if (!data.pixels.empty()) {
        const uint8_t* src = data.pixels.data() + s * sample_numel;
        for (int64_t c = 0; c < channels; ++c) {
          const float* table = lut.data() + c * 256;
          for (int64_t i = 0; i < plane; ++i) dst[c * plane + i] = table[src[c * plane + i]];
        }
      } else {
        std::copy_n(data.values.data() + s * sample_numel, sample_numel, dst);
      }
      if (!data.labels.empty()) slot.labels[static_cast<size_t>(b)] = data.labels[static_cast<size_t>(s)];
      if (outputs > 0)
        std::copy_n(data.targets.data() + s * outputs, outputs, slot.targets.data() + b * outputs);
    }
  }

  void worker_loop() {
    const int64_t nslots = static_cast<int64_t>(slots.size());
    for (;;) {
      int64_t seq;
      Slot* slot;
      {
        std::unique_lock<std::mutex> lock(mutex);
        work_cv.wait(lock, [&] {
          return stop || (next_claim < limit &&
                          slots[static_cast<size_t>(next_claim % nslots)].state == SlotState::free);
        });
        if (stop) return;
        seq = next_claim++;
        slot = &slots[static_cast<size_t>(seq % nslots)];
        slot->state = SlotState::filling;
        slot->seq = seq;
        slot->error = nullptr;
      }
      try {
        fill(*slot, seq);
      } catch (...) {
        slot->error = std::current_exception();
      }
      {
        std::lock_guard<std::mutex> lock(mutex);
        slot->state = SlotState::ready;
      }
      ready_cv.notify_all();
    }
  }
};

Loader::Loader(const Dataset& data, LoaderOptions options)
    : impl_(std::make_unique<Impl>(data, options)) {
  Impl& m = *impl_;
  const LoaderOptions& o = m.opt;
  if (o.batch < 1 || o.threads < 1 || o.prefetch < 1 || o.world < 1 || o.rank < 0 ||
      o.rank >= o.world)
    throw ConfigError("loader: need batch >= 1, threads >= 1, prefetch >= 1 and 0 <= rank < "
                      "world; got batch " + std::to_string(o.batch) + ", threads " +
                      std::to_string(o.threads) + ", prefetch " + std::to_string(o.prefetch) +
                      ", rank " + std::to_string(o.rank) + " of " + std::to_string(o.world));
  m.sample_numel = data.sample.numel();
  const int64_t n = data.count;
  if (n <= 0 || m.sample_numel <= 0)
    throw RuntimeError("loader: data set '" + data.name + "' is empty");
  if (!data.pixels.empty()) {
    if (static_cast<int64_t>(data.pixels.size()) != n * m.sample_numel)
      throw RuntimeError("loader: data set '" + data.name + "' has " +
                         std::to_string(data.pixels.size()) + " pixel bytes, expected " +
                         std::to_string(n) + " x " + data.sample.str());
  } else if (static_cast<int64_t>(data.values.size()) != n * m.sample_numel) {
    throw RuntimeError("loader: data set '" + data.name + "' has " +
                       std::to_string(data.values.size()) + " values, expected " +
                       std::to_string(n) + " x " + data.sample.str());
  }
  if (!data.labels.empty() && static_cast<int64_t>(data.labels.size()) != n)
    throw RuntimeError("loader: data set '" + data.name + "' has " +
                       std::to_string(data.labels.size()) + " labels for " + std::to_string(n) +
                       " samples");
  if (!data.targets.empty()) {
    if (data.targets.size() % static_cast<size_t>(n) != 0)
      throw RuntimeError("loader: data set '" + data.name + "' has " +
                         std::to_string(data.targets.size()) + " targets for " +
                         std::to_string(n) + " samples");
    m.outputs = static_cast<int64_t>(data.targets.size()) / n;
  }

  // Normalisation table, per channel of a (C,H,W) sample (one channel otherwise).
  if (!data.pixels.empty()) {
    m.channels = data.sample.rank() == 3 ? data.sample[0] : 1;
    m.plane = m.sample_numel / m.channels;
    const size_t nm = data.mean.size();
    if (nm != data.stddev.size() || (nm != 0 && nm != 1 && static_cast<int64_t>(nm) != m.channels))
      throw RuntimeError("loader: data set '" + data.name + "' has " + std::to_string(nm) +
                         " means and " + std::to_string(data.stddev.size()) +
                         " standard deviations for " + std::to_string(m.channels) +
                         " channels (need 0, 1 or one per channel)");
    m.lut.resize(static_cast<size_t>(m.channels * 256));
    for (int64_t c = 0; c < m.channels; ++c) {
      const size_t k = nm == 1 ? 0 : static_cast<size_t>(c);
      const float mean = nm ? data.mean[k] : 0.0f;
      const float sd = nm ? data.stddev[k] : 1.0f;
      for (int p = 0; p < 256; ++p)
        m.lut[static_cast<size_t>(c * 256 + p)] = (static_cast<float>(p) / 255.0f - mean) / sd;
    }
  }

  // Training: every rank runs the same number of steps, n / (world * batch) per epoch (the
  // remainder of the epoch order is dropped). Evaluation: rank blocks cover all n samples.
  m.eval_mode = !o.drop_last;
  if (m.eval_mode) {
    m.shard_begin = o.rank * n / o.world;
    m.shard_end = (o.rank + 1) * n / o.world;
    m.batches_per_epoch = (m.shard_end - m.shard_begin + o.batch - 1) / o.batch;
    if (m.batches_per_epoch == 0)
      throw ConfigError("loader: data set '" + data.name + "' has " + std::to_string(n) +
                        " samples, fewer than the " + std::to_string(o.world) +
                        " ranks that evaluate it; use fewer workers or more data");
  } else {
    m.batches_per_epoch = n / (o.world * o.batch);
    if (m.batches_per_epoch == 0)
      throw ConfigError("loader: a global batch of " + std::to_string(o.world) + " ranks x " +
                        std::to_string(o.batch) + " samples is larger than the " +
                        std::to_string(n) + " samples of data set '" + data.name +
                        "'; lower batch_per_worker or use more data");
  }
  m.limit = m.eval_mode ? m.batches_per_epoch : std::numeric_limits<int64_t>::max();

  m.slots.resize(static_cast<size_t>(o.prefetch) + 1);
  for (auto& s : m.slots) {
    s.images.resize(static_cast<size_t>(o.batch * m.sample_numel));
    if (!data.labels.empty()) s.labels.resize(static_cast<size_t>(o.batch));
    if (m.outputs > 0) s.targets.resize(static_cast<size_t>(o.batch * m.outputs));
  }
  for (int t = 0; t < o.threads; ++t) m.workers.emplace_back([&m] { m.worker_loop(); });
}

Loader::~Loader() {
  {
    std::lock_guard<std::mutex> lock(impl_->mutex);
    impl_->stop = true;
  }
  impl_->work_cv.notify_all();
  for (auto& w : impl_->workers) w.join();
}

bool Loader::next(Batch& batch) {
  Impl& m = *impl_;
  const int64_t nslots = static_cast<int64_t>(m.slots.size());
  std::unique_lock<std::mutex> lock(m.mutex);
  if (m.held >= 0) {  // the previous batch is no longer in use
    m.slots[static_cast<size_t>(m.held)].state = SlotState::free;
    m.held = -1;
    m.work_cv.notify_all();
  }
  if (m.eval_mode) {
    if (m.pos_in_pass == m.batches_per_epoch) {  // end of pass: report it once
      m.pos_in_pass = 0;
      m.pass_open = false;
      batch = Batch{};
      m.last_wait = 0.0;
      return false;
    }
    if (!m.pass_open) {  // a new pass starts: let the workers fill it
      m.pass_open = true;
      m.limit += m.batches_per_epoch;
      m.work_cv.notify_all();
    }
  }
  const int64_t seq = m.next_consume;
  Slot& slot = m.slots[static_cast<size_t>(seq % nslots)];
  const double t0 = now_seconds();
  m.ready_cv.wait(lock, [&] { return slot.state == SlotState::ready && slot.seq == seq; });
  m.last_wait = now_seconds() - t0;
  m.next_consume++;
  m.pos_in_pass++;
  slot.state = SlotState::in_use;
  m.held = seq % nslots;
  if (slot.error) {
    std::exception_ptr e = slot.error;
    slot.error = nullptr;
    std::rethrow_exception(e);
  }
  batch.size = slot.size;
  batch.epoch = slot.epoch;
  batch.images = slot.images.data();
  batch.labels = m.data.labels.empty() ? nullptr : slot.labels.data();
  batch.targets = m.outputs > 0 ? slot.targets.data() : nullptr;
  return true;
}

double Loader::last_wait_seconds() const {
  std::lock_guard<std::mutex> lock(impl_->mutex);
  return impl_->last_wait;
}

int64_t Loader::batches_per_epoch() const { return impl_->batches_per_epoch; }

}  // namespace ts
