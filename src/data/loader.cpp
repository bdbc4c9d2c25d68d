// Loader: turns a SampleSource into batches, read and decoded ahead by worker threads.
//
// Batches form one sequence, numbered 0, 1, 2, ...; batch `seq` belongs to epoch
// seq / batches_per_epoch and its contents depend only on (seed, epoch, rank, seq), never on
// which worker filled it, so results are identical for any thread count.
//
// Rank split. Training (drop_last): global step k of an epoch takes the k-th block of
// world * batch samples of the epoch's shuffled order, and rank r takes the r-th batch-sized
// slice of that block. So N ranks x batch b see, step for step, exactly the samples that
// 1 rank x batch N*b sees (the data-parallel equivalence, docs/strategies.md). Evaluation
// (!drop_last): rank r takes the contiguous block [r*n/world, (r+1)*n/world) of the order, so
// the ranks together cover every sample exactly once. With per-rank shares (global_batch set),
// step k's block has global_batch samples and rank r takes [offset_r, offset_r + share_r) of
// it; a share change (set_share) applies from a batch number that no worker has claimed yet, so
// every batch is read with the share its step has on every rank. A worker claims the
// next number only when its ring slot (seq % slots) is free; next() hands slots out strictly in
// order. The slot handed to the trainer stays untouched until the following next() call, so
// the ring has prefetch + 1 slots: `prefetch` being filled ahead plus the one in use.
#include "data/loader.h"

#include <algorithm>
#include <condition_variable>
#include <cstdlib>
#include <exception>
#include <limits>
#include <map>
#include <mutex>
#include <new>
#include <numeric>
#include <thread>
#include <vector>

#include "core/error.h"
#include "core/rng.h"
#include "core/timer.h"
#include "data/counting_storage.h"

namespace ts {

namespace {

enum class SlotState { free, filling, ready, in_use };

// 64-byte aligned host memory (the default SlotAllocator). Not zeroed: its pages become
// resident only when a batch is written into them, so the slots of an evaluation loader that
// never runs cost no memory.
std::shared_ptr<void> aligned_host_memory(size_t bytes) {
  void* p = std::aligned_alloc(64, (bytes + 63) / 64 * 64);
  if (!p) throw std::bad_alloc();
  return std::shared_ptr<void>(p, std::free);
}

// `count` elements of T from `allocate` (or the default); null for count 0.
template <typename T>
std::shared_ptr<void> slot_memory(const SlotAllocator& allocate, int64_t count) {
  if (count == 0) return nullptr;
  const size_t bytes = static_cast<size_t>(count) * sizeof(T);
  std::shared_ptr<void> p = allocate ? allocate(bytes) : aligned_host_memory(bytes);
  if (!p) throw RuntimeError("loader: the slot allocator returned no memory for " + std::to_string(bytes) + " bytes");
  return p;
}

struct Slot {
  SlotState state = SlotState::free;
  int64_t seq = -1;
  int64_t size = 0;
  int64_t epoch = 0;
  std::shared_ptr<void> images;   // float (batch, sample)
  std::shared_ptr<void> labels;   // int32 (batch), or null without classes
  std::shared_ptr<void> targets;  // float (batch, outputs), or null without targets
  std::exception_ptr error;
  ReadCounts reads;  // storage reads of this batch (its fill runs in one worker thread)

  float* image_data() const { return static_cast<float*>(images.get()); }
  int32_t* label_data() const { return static_cast<int32_t*>(labels.get()); }
  float* target_data() const { return static_cast<float*>(targets.get()); }
};

}  // namespace

struct Loader::Impl {
  const SampleSource& source;
  LoaderOptions opt;
  int64_t count = 0;            // samples in the source
  int64_t sample_numel = 0;
  int64_t classes = 0;          // > 0: batches carry labels
  int64_t outputs = 0;          // targets per sample (0 = none)
  int64_t shard_begin = 0;      // evaluation: this rank's block [shard_begin, shard_end)
  int64_t shard_end = 0;
  int64_t batches_per_epoch = 0;
  int64_t slot_rows = 0;        // rows of each slot: batch, or max_batch with shares
  bool eval_mode = false;       // one pass, then false, then restart

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
  bool pass_open = false;          // eval: the current pass's batches may be read (from its first next())
  // Training shares: {from batch, batch, offset}, in increasing from-batch order.
  struct Share { int64_t from, batch, offset; };
  std::vector<Share> shares;
  int64_t step_samples = 0;        // training: samples of one global step
  double last_wait = 0.0;
  ReadCounts last_reads;           // storage reads of the batch the last next() returned
  // Epoch orders (shared with workers; old epochs are pruned).
  std::map<int64_t, std::shared_ptr<const std::vector<int64_t>>> orders;

  Impl(const SampleSource& s, LoaderOptions o) : source(s), opt(std::move(o)) {}

  // The whole epoch order (the same on every rank); ranks pick their samples in fill().
  std::shared_ptr<const std::vector<int64_t>> order_for(int64_t epoch) {
    std::lock_guard<std::mutex> lock(mutex);
    auto it = orders.find(epoch);
    if (it != orders.end()) return it->second;
    std::vector<int64_t> perm(static_cast<size_t>(count));
    std::iota(perm.begin(), perm.end(), int64_t{0});
    // A source may define its own shuffled order (records with a shuffle buffer); else
    // Fisher-Yates from (seed, epoch): every rank computes the same epoch order.
    if (opt.shuffle && !source.shuffled_order(opt.seed, epoch, perm)) {
      Rng rng(seed_mix(opt.seed, static_cast<uint64_t>(epoch), 0x5a4ff1e));
      for (int64_t i = count - 1; i > 0; --i) {
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

  // The training share of batch `seq` (under the mutex: set_share appends).
  Share share_of(int64_t seq) const {
    Share found = shares.front();
    for (const Share& s : shares)
      if (s.from <= seq) found = s;
    return found;
  }

  void fill(Slot& slot, int64_t seq, const Share& share) {
    const int64_t epoch = seq / batches_per_epoch;
    const int64_t index = seq % batches_per_epoch;
    // Training: rank's slice of global step `index`; evaluation: next piece of the rank's block.
    const int64_t start = eval_mode ? shard_begin + index * opt.batch : index * step_samples + share.offset;
    const int64_t size = eval_mode ? std::min(opt.batch, shard_end - start) : share.batch;
    auto order = order_for(epoch);
    slot.epoch = epoch;
    slot.size = size;
    // Sample s of the batch is order[start + s]; a source that prefers sequential reads gets
    // them in increasing index order (each still lands in its own place in the batch).
    std::vector<int64_t> visit(static_cast<size_t>(size));
    std::iota(visit.begin(), visit.end(), int64_t{0});
    const int64_t* picked = order->data() + start;
    if (source.prefers_sequential())
      std::sort(visit.begin(), visit.end(), [&](int64_t a, int64_t b) { return picked[a] < picked[b]; });
    for (int64_t b : visit)
      source.read_augmented(picked[b], seed_mix(opt.seed, static_cast<uint64_t>(epoch), static_cast<uint64_t>(picked[b])),
                            slot.image_data() + b * sample_numel,  // (sample)
                            classes > 0 ? slot.label_data() + b : nullptr,
                            outputs > 0 ? slot.target_data() + b * outputs : nullptr);  // (outputs)
    // A partial (evaluation) batch: the rest of the slot is zero, not stale or uninitialised.
    const int64_t rest = slot_rows - size;
    std::fill_n(slot.image_data() + size * sample_numel, rest * sample_numel, 0.0f);
    if (classes > 0) std::fill_n(slot.label_data() + size, rest, 0);
    if (outputs > 0) std::fill_n(slot.target_data() + size * outputs, rest * outputs, 0.0f);
  }

  void worker_loop() {
    const int64_t nslots = static_cast<int64_t>(slots.size());
    for (;;) {
      int64_t seq;
      Slot* slot;
      Share share;
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
        share = eval_mode ? Share{0, opt.batch, 0} : share_of(seq);
      }
      try {
        const ReadCounts before = thread_read_counts();
        fill(*slot, seq, share);
        const ReadCounts after = thread_read_counts();
        slot->reads = {after.bytes - before.bytes, after.seconds - before.seconds};
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

Loader::Loader(const SampleSource& source, LoaderOptions options)
    : impl_(std::make_unique<Impl>(source, std::move(options))) {
  Impl& m = *impl_;
  const LoaderOptions& o = m.opt;
  if (o.first_batch < 0 || (o.first_batch > 0 && !o.drop_last))
    throw ConfigError("loader: first_batch " + std::to_string(o.first_batch) +
                      " is only for training loaders (drop_last) and must be >= 0");
  if (o.batch < 1 || o.threads < 1 || o.prefetch < 1 || o.world < 1 || o.rank < 0 ||
      o.rank >= o.world)
    throw ConfigError("loader: need batch >= 1, threads >= 1, prefetch >= 1 and 0 <= rank < "
                      "world; got batch " + std::to_string(o.batch) + ", threads " +
                      std::to_string(o.threads) + ", prefetch " + std::to_string(o.prefetch) +
                      ", rank " + std::to_string(o.rank) + " of " + std::to_string(o.world));
  const SampleSpec& spec = source.spec();
  const int64_t n = source.count();
  m.count = n;
  m.sample_numel = spec.sample.numel();
  m.classes = spec.classes;
  m.outputs = spec.classes > 0 ? 0 : spec.outputs;
  if (n <= 0 || m.sample_numel <= 0 || spec.sample.rank() == 0)
    throw RuntimeError("loader: the data set is empty: " + source.describe());

  // Training: every rank runs the same number of steps, n / (world * batch) per epoch (the
  // remainder of the epoch order is dropped). Evaluation: rank blocks cover all n samples.
  m.eval_mode = !o.drop_last;
  if (m.eval_mode) {
    m.shard_begin = o.rank * n / o.world;
    m.shard_end = (o.rank + 1) * n / o.world;
    m.batches_per_epoch = (m.shard_end - m.shard_begin + o.batch - 1) / o.batch;
    if (m.batches_per_epoch == 0)
      throw ConfigError("loader: the data set has " + std::to_string(n) + " samples, fewer than the " +
                        std::to_string(o.world) + " ranks that evaluate it; use fewer workers or more data (" +
                        source.describe() + ")");
  } else {
    const bool shared = o.global_batch > 0;
    m.step_samples = shared ? o.global_batch : o.world * o.batch;
    m.shares.push_back({o.first_batch, o.batch, shared ? o.share_offset : o.rank * o.batch});
    if (shared && (o.share_offset < 0 || o.share_offset + o.batch > o.global_batch || o.max_batch > o.global_batch))
      throw ConfigError("loader: a share of " + std::to_string(o.batch) + " samples (at most " +
                        std::to_string(o.max_batch) + ") from offset " + std::to_string(o.share_offset) +
                        " does not fit in the global batch of " + std::to_string(o.global_batch));
    for (const LoaderOptions::ShareFrom& s : o.later_shares) {
      if (!shared || s.from_batch <= m.shares.back().from || s.batch < 1 || s.offset < 0 || s.offset + s.batch > o.global_batch)
        throw ConfigError("loader: a later share of " + std::to_string(s.batch) + " samples from offset " +
                          std::to_string(s.offset) + " at batch " + std::to_string(s.from_batch) +
                          " does not follow the shares before it or does not fit the global batch");
      m.shares.push_back({s.from_batch, s.batch, s.offset});
    }
    m.batches_per_epoch = n / m.step_samples;
    if (m.batches_per_epoch == 0)
      throw ConfigError("loader: a global batch of " + std::to_string(m.step_samples) + " samples (" +
                        std::to_string(o.world) + " ranks) is larger than the " + std::to_string(n) +
                        " samples of the data set; lower batch_per_worker or use more data (" +
                        source.describe() + ")");
  }
  m.slot_rows = m.eval_mode ? o.batch : std::max(o.batch, o.max_batch);
  // Training workers start at once; evaluation reads start with a pass's first next(), so they
  // never compete with the training steps between evaluations.
  m.limit = m.eval_mode ? 0 : std::numeric_limits<int64_t>::max();
  m.next_claim = m.next_consume = o.first_batch;  // workers fill from there (0 unless resumed)

  // An evaluation pass never has more batches ahead than it holds: more slots would stay unused.
  const int64_t ahead = m.eval_mode ? std::min<int64_t>(o.prefetch, m.batches_per_epoch) : o.prefetch;
  m.slots.resize(static_cast<size_t>(ahead) + 1);
  for (auto& s : m.slots) {
    s.images = slot_memory<float>(o.allocate, m.slot_rows * m.sample_numel);
    s.labels = slot_memory<int32_t>(o.allocate, m.classes > 0 ? m.slot_rows : 0);
    s.targets = slot_memory<float>(o.allocate, m.slot_rows * m.outputs);
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
      m.last_reads = {};
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
  m.last_reads = slot.reads;
  batch.size = slot.size;
  batch.epoch = slot.epoch;
  batch.images = slot.image_data();
  batch.labels = slot.label_data();    // null without classes
  batch.targets = slot.target_data();  // null without targets
  return true;
}

double Loader::last_wait_seconds() const {
  std::lock_guard<std::mutex> lock(impl_->mutex);
  return impl_->last_wait;
}

ReadCounts Loader::last_read_counts() const {
  std::lock_guard<std::mutex> lock(impl_->mutex);
  return impl_->last_reads;
}

int64_t Loader::batches_per_epoch() const { return impl_->batches_per_epoch; }

int64_t Loader::position() const {
  std::lock_guard<std::mutex> lock(impl_->mutex);
  return impl_->next_consume;
}

void Loader::set_share(int64_t batch, int64_t offset, int64_t from_batch) {
  Impl& m = *impl_;
  std::lock_guard<std::mutex> lock(m.mutex);
  if (m.eval_mode || m.opt.global_batch <= 0)
    throw ConfigError("loader: set_share needs a training loader with shares (LoaderOptions::global_batch)");
  if (batch < 1 || batch > m.slot_rows || offset < 0 || offset + batch > m.step_samples)
    throw ConfigError("loader: a share of " + std::to_string(batch) + " samples from offset " + std::to_string(offset) +
                      " does not fit (slots of " + std::to_string(m.slot_rows) + " rows, a global batch of " +
                      std::to_string(m.step_samples) + ")");
  if (from_batch < m.next_claim || from_batch < m.shares.back().from)
    throw ConfigError("loader: a share change from batch " + std::to_string(from_batch) +
                      " comes too late: the workers have claimed up to batch " + std::to_string(m.next_claim - 1) +
                      "; change from position() + prefetch + 1 on");
  m.shares.push_back({from_batch, batch, offset});
}

}  // namespace ts
