// Gradient / weight exchange (see gradient_exchange.h).
//
// Buckets tile the flat arena from the top: bucket i = [P - (i+1) B, P - i B), down to the
// tail T = min(B, 64 KiB of floats), so they become final in order while backward walks the
// layers from the last to the first. The tail [0, T) is the last bucket: it is reduced
// through a staging buffer that carries two extra floats, [loss, non-finite count]; summed
// over ranks they give the mean loss and the divergence verdict without a message of their
// own. Keeping the tail small keeps its two copies cheap (a whole 25 MiB bucket would cost
// milliseconds). weight_avg also appends the non-trainable state there.
//
// Threading: with overlap, one communication thread per exchange reduces the posted buckets in
// order; the caller's thread makes no MPI call between begin_step and the end of
// finish_step's wait, and the communication thread makes none outside that window, so MPI
// sees one thread at a time (MPI_THREAD_SERIALIZED). The thread sleeps on a condition variable
// when it has nothing to do, so it does not take a core from the compute threads.
#include "dist/gradient_exchange.h"

#include <algorithm>
#include <cmath>
#include <condition_variable>
#include <cstring>
#include <exception>
#include <mutex>
#include <thread>

#include <omp.h>

#include "core/error.h"
#include "core/timer.h"
#include "dist/shm_allreduce.h"

namespace ts {
namespace {

constexpr int64_t kExtras = 2;  // [loss, non-finite count] after the last bucket
constexpr int64_t kMaxTail = 16384;  // floats in the staged last bucket, at most
// MPI counts are int: a gathered bucket (world x bucket floats) must stay below 2^30.
constexpr int64_t kMaxGatherFloats = (int64_t{1} << 30) - 1;

void scale(float* data, int64_t count, float factor) {
  for (int64_t i = 0; i < count; ++i) data[i] *= factor;
}

}  // namespace

DistStrategy parse_dist_strategy(const std::string& name) {
  if (name == "sync") return DistStrategy::sync;
  if (name == "weight_avg") return DistStrategy::weight_avg;
  throw ConfigError("unknown distributed strategy '" + name + "'; accepted: sync, weight_avg");
}

struct GradientExchange::Impl {
  Communicator& comm;
  ModelArenas arenas;
  ExchangeOptions opt;
  const int world, rank;
  const float inv_world;
  const bool parameter_server;  // sync + ps: rank 0 applies the optimizer
  const bool threaded;          // sync + overlap: a communication thread reduces the buckets
  const bool sharded;           // sync + shm + sharded_update on more than one rank
  RangeUpdate update;           // this step's optimizer update (begin_step)
  std::vector<std::pair<int64_t, int64_t>> buckets;
  std::vector<float> staging;   // last bucket (+ state for weight_avg) + kExtras
  std::vector<float> gathered;  // ps, rank 0: world x (largest bucket + kExtras)

  // Per step (the communication thread touches these only while it owns a posted bucket).
  float local_loss = 0;
  int64_t frontier = 0;          // gradients [frontier, param_count) are final
  int64_t posted_local = 0;      // buckets handed out so far this step
  ExchangeTimes times;
  float nonfinite_since_average = 0;  // weight_avg: local non-finite losses since the last average

  // Communication thread.
  std::thread thread;
  std::mutex mutex;
  std::condition_variable work_cv, done_cv;
  int64_t posted = 0, done = 0;
  bool stop = false;
  std::exception_ptr error;

  Impl(Communicator& c, ModelArenas a, ExchangeOptions o)
      : comm(c), arenas(a), opt(o), world(c.size()), rank(c.rank()), inv_world(1.0f / static_cast<float>(c.size())),
        parameter_server(o.strategy == DistStrategy::sync && o.algorithm == AllreduceAlgorithm::ps),
        threaded(o.strategy == DistStrategy::sync && o.overlap),
        sharded(o.sharded_update && c.size() > 1) {}

  int64_t last_count() const { return buckets.back().second; }
  float* extras() { return staging.data() + static_cast<int64_t>(staging.size()) - kExtras; }

  // Sum one gradient bucket over ranks and scale it to the mean (sync), or gather it to rank 0
  // and average it there (ps). The last bucket goes through the staging buffer with the loss.
  void reduce_bucket(size_t i) {
    const auto [offset, count] = buckets[i];
    const bool last = i + 1 == buckets.size();
    const double t0 = now_seconds();
    float* data = arenas.grads + offset;
    int64_t n = count;
    if (last) {
      if (count > 0) std::memcpy(staging.data(), data, static_cast<size_t>(count) * sizeof(float));
      extras()[0] = local_loss;
      extras()[1] = std::isfinite(local_loss) ? 0.0f : 1.0f;
      data = staging.data();
      n = count + kExtras;
    }
    if (parameter_server) {
      comm.gather_to_root(data, n, gathered.data());
      const double t1 = now_seconds();
      times.gather += t1 - t0;
      times.comm += t1 - t0;
      if (rank != 0) return;  // other ranks keep their own gradients; rank 0 averages (others report 0)
      for (int q = 1; q < world; ++q) {  // rank order; the loss stays a sum
        const float* src = gathered.data() + static_cast<int64_t>(q) * n;
        for (int64_t k = 0; k < n; ++k) data[k] += src[k];
      }
      if (world > 1) scale(data, count, inv_world);
      if (last && count > 0)
        std::memcpy(arenas.grads + offset, staging.data(), static_cast<size_t>(count) * sizeof(float));
      times.average += now_seconds() - t1;
    } else if (sharded && !last) {
      // Sum, then this rank's share: mean gradient and optimizer step on the node's weights.
      double updating = 0;
      float* grads = data;
      allreduce_sum_update(comm, grads, arenas.params + offset, count, [&](int64_t o, int64_t c) {
        scale(grads + o, c, inv_world);
        const double u0 = now_seconds();
        update(offset + o, c);
        updating += now_seconds() - u0;
      });
      times.optimizer += updating;
      times.comm += now_seconds() - t0 - updating;
    } else {
      allreduce_sum(comm, opt.algorithm, data, n);
      if (world > 1) scale(data, count, inv_world);
      if (last && count > 0)
        std::memcpy(arenas.grads + offset, staging.data(), static_cast<size_t>(count) * sizeof(float));
      times.comm += now_seconds() - t0;
    }
  }

  void thread_loop() {
    // The thread's own work (a sharded optimizer step on the CPU backend) must not take a team
    // of OpenMP threads beside the compute threads: it runs on this thread alone.
    omp_set_num_threads(1);
    for (;;) {
      size_t i;
      {
        std::unique_lock<std::mutex> lock(mutex);
        work_cv.wait(lock, [&] { return stop || posted > done; });
        if (stop) return;
        i = static_cast<size_t>(done);
      }
      std::exception_ptr failure;
      try {
        reduce_bucket(i);
      } catch (...) {
        failure = std::current_exception();
      }
      {
        std::lock_guard<std::mutex> lock(mutex);
        if (failure) {
          error = failure;
          done = static_cast<int64_t>(buckets.size());  // give up the step; the caller rethrows
        } else {
          ++done;
        }
      }
      done_cv.notify_one();
    }
  }

  // Hands out every bucket whose range lies at or above the frontier.
  void post_ready_buckets() {
    const int64_t before = posted_local;
    while (posted_local < static_cast<int64_t>(buckets.size()) &&
           buckets[static_cast<size_t>(posted_local)].first >= frontier)
      ++posted_local;
    if (!threaded || posted_local == before) return;
    {
      std::lock_guard<std::mutex> lock(mutex);
      posted = posted_local;
    }
    work_cv.notify_one();
  }

  // Every gradient bucket reduced: by the thread (waited for) or here.
  void complete_buckets() {
    frontier = 0;
    post_ready_buckets();
    const double t0 = now_seconds();
    if (threaded) {
      std::unique_lock<std::mutex> lock(mutex);
      done_cv.wait(lock, [&] { return done == static_cast<int64_t>(buckets.size()); });
      if (error) {
        std::exception_ptr e = error;
        error = nullptr;
        std::rethrow_exception(e);
      }
    } else {
      for (size_t i = 0; i < buckets.size(); ++i) reduce_bucket(i);
    }
    times.comm_wait += now_seconds() - t0;
  }

  // ps: rank 0's weights (and, with the last bucket, the summed loss and flag) to every rank.
  void broadcast_weights() {
    const double t0 = now_seconds();
    for (size_t i = 0; i < buckets.size(); ++i) {
      const auto [offset, count] = buckets[i];
      if (i + 1 < buckets.size()) {
        comm.broadcast(arenas.params + offset, count, 0);
        continue;
      }
      if (count > 0) std::memcpy(staging.data(), arenas.params + offset, static_cast<size_t>(count) * sizeof(float));
      comm.broadcast(staging.data(), count + kExtras, 0);
      if (count > 0) std::memcpy(arenas.params + offset, staging.data(), static_cast<size_t>(count) * sizeof(float));
    }
    const double dt = now_seconds() - t0;
    times.broadcast += dt;
    times.comm += dt;
    times.comm_wait += dt;
  }

  // weight_avg: parameters, state and the loss/flag averaged (summed) over ranks, blocking.
  void average_weights() {
    const double t0 = now_seconds();
    PsTimings ps_sum;
    auto reduce = [&](float* data, int64_t n, int64_t scaled) {
      PsTimings ps;
      allreduce_sum(comm, opt.algorithm, data, n, &ps);
      ps_sum.gather_s += ps.gather_s;
      ps_sum.average_s += ps.average_s;
      ps_sum.broadcast_s += ps.broadcast_s;
      if (world > 1) scale(data, scaled, inv_world);
    };
    for (size_t i = 0; i + 1 < buckets.size(); ++i)
      reduce(arenas.params + buckets[i].first, buckets[i].second, buckets[i].second);
    const int64_t count = last_count();
    float* s = staging.data();
    if (count > 0) std::memcpy(s, arenas.params, static_cast<size_t>(count) * sizeof(float));
    if (arenas.state_count > 0)
      std::memcpy(s + count, arenas.state, static_cast<size_t>(arenas.state_count) * sizeof(float));
    extras()[0] = local_loss;
    extras()[1] = nonfinite_since_average;
    reduce(s, static_cast<int64_t>(staging.size()), count + arenas.state_count);
    if (count > 0) std::memcpy(arenas.params, s, static_cast<size_t>(count) * sizeof(float));
    if (arenas.state_count > 0)
      std::memcpy(arenas.state, s + count, static_cast<size_t>(arenas.state_count) * sizeof(float));
    nonfinite_since_average = 0;
    const double dt = now_seconds() - t0;
    times.comm += dt;
    times.comm_wait += dt;
    if (opt.algorithm == AllreduceAlgorithm::ps) {
      times.gather += ps_sum.gather_s;
      times.average += ps_sum.average_s;
      times.broadcast += ps_sum.broadcast_s;
    }
  }

  // The step's update over [offset, offset + count), timed.
  void timed_update(int64_t offset, int64_t count) {
    const double t0 = now_seconds();
    update(offset, count);
    times.optimizer += now_seconds() - t0;
  }

  // Mean loss and verdict from the summed extras.
  void read_verdict(StepVerdict& v) {
    v.exchanged = true;
    v.loss = static_cast<double>(extras()[0]) / world;
    v.diverged = extras()[1] > 0 || !std::isfinite(v.loss);
  }
};

GradientExchange::GradientExchange(Communicator& comm, ModelArenas arenas, ExchangeOptions options)
    : impl_(std::make_unique<Impl>(comm, arenas, options)) {
  Impl& m = *impl_;
  TS_CHECK(arenas.param_count >= 0 && arenas.state_count >= 0, "GradientExchange: negative arena size");
  if (m.threaded && !mpi_threads_serialized())
    throw ConfigError("dist.overlap: the communication thread needs MPI_THREAD_SERIALIZED, which this MPI library "
                      "did not provide; set dist.overlap: false");
  int64_t bucket = std::max<int64_t>(1, options.bucket_elements);
  if (m.parameter_server) bucket = std::min(bucket, kMaxGatherFloats / m.world - kExtras);
  const int64_t total = arenas.param_count;
  const int64_t tail = std::min({bucket, kMaxTail, total});
  for (int64_t top = total; top > tail; top -= bucket) {
    const int64_t begin = std::max(tail, top - bucket);
    m.buckets.emplace_back(begin, top - begin);
  }
  m.buckets.emplace_back(0, tail);  // staged with the loss (count 0 without parameters)
  const bool with_state = options.strategy == DistStrategy::weight_avg;
  m.staging.resize(static_cast<size_t>(m.last_count() + (with_state ? arenas.state_count : 0) + kExtras));
  if (m.parameter_server && m.rank == 0) {
    int64_t largest = 0;
    for (const auto& b : m.buckets) largest = std::max(largest, b.second);
    m.gathered.resize(static_cast<size_t>((largest + kExtras) * m.world));
  }
  if (m.threaded && options.algorithm == AllreduceAlgorithm::shm) {
    // shm's waiting rank polls; from a communication thread that shares cores with compute
    // threads it should yield at every poll (unless the user chose a waiting policy).
    ShmAllreduceSettings shm = shm_allreduce_settings();
    if (shm.polls_per_yield == 0 && shm.block_after_polls == 0) {
      shm.polls_per_yield = 1;
      set_shm_allreduce_settings(shm);
    }
  }
  if (m.sharded) {
    if (options.strategy != DistStrategy::sync || options.algorithm != AllreduceAlgorithm::shm)
      throw ConfigError("dist.update: sharded needs dist.strategy sync and dist.allreduce shm");
    const int nodes = allreduce_node_count(comm);
    if (nodes != 1)
      throw ConfigError("dist.update: sharded works on one node only; this job spans " + std::to_string(nodes) +
                        " nodes; set dist.update: replicated");
  }
  if (m.threaded) m.thread = std::thread([&m] { m.thread_loop(); });
}

GradientExchange::~GradientExchange() {
  Impl& m = *impl_;
  if (!m.thread.joinable()) return;
  bool busy;
  {
    std::lock_guard<std::mutex> lock(m.mutex);
    m.stop = true;
    busy = m.done < m.posted;
  }
  if (busy) {
    // Unwinding from an error in the middle of a step: the thread may sit in a collective
    // that other ranks will never join, so joining could hang. Leave it and its state alive;
    // the caller is about to end the job (Communicator::abort_all).
    m.thread.detach();
    (void)impl_.release();
    return;
  }
  m.work_cv.notify_one();
  m.thread.join();
}

void GradientExchange::broadcast_model() {
  Impl& m = *impl_;
  // sharded: the weights are one node-wide array already (broadcasting into it would race).
  if (!m.sharded) m.comm.broadcast(m.arenas.params, m.arenas.param_count, 0);
  m.comm.broadcast(m.arenas.state, m.arenas.state_count, 0);
}

void GradientExchange::begin_step(float local_loss, RangeUpdate update) {
  Impl& m = *impl_;
  m.local_loss = local_loss;
  m.update = std::move(update);
  m.frontier = m.arenas.param_count;
  m.posted_local = 0;
  m.times = ExchangeTimes{};
  if (m.threaded) {  // the thread is idle: the previous step waited for all of its buckets
    std::lock_guard<std::mutex> lock(m.mutex);
    m.posted = 0;
    m.done = 0;
  }
}

void GradientExchange::gradients_ready(int64_t offset, int64_t count) {
  Impl& m = *impl_;
  if (m.opt.strategy != DistStrategy::sync) return;  // weight_avg exchanges weights, not gradients
  if (offset < 0 || count < 0 || offset + count != m.frontier)
    throw RuntimeError("GradientExchange: gradient range [" + std::to_string(offset) + ", " +
                       std::to_string(offset + count) + ") does not end where the previous one began (" +
                       std::to_string(m.frontier) + "); ranges must arrive in reverse arena order");
  m.frontier = offset;
  m.post_ready_buckets();
}

StepVerdict GradientExchange::finish_step(bool average_weights) {
  Impl& m = *impl_;
  StepVerdict v;
  if (m.opt.strategy == DistStrategy::weight_avg) {
    if (std::isfinite(m.local_loss)) m.timed_update(0, m.arenas.param_count);
    else m.nonfinite_since_average += 1;
    if (average_weights) {
      m.average_weights();
      m.read_verdict(v);
    } else {
      v.loss = m.local_loss;
    }
  } else {
    m.complete_buckets();
    m.read_verdict(v);  // ps: meaningful on rank 0 only until the broadcast
    if (!m.parameter_server) {
      if (!m.sharded) {
        if (!v.diverged) m.timed_update(0, m.arenas.param_count);
      } else {
        // Every bucket but the last was updated share by share as it was summed; the last one's
        // shares now, and nobody reads the node's weights again before all are done.
        const int64_t tail = m.last_count();
        const int64_t begin = tail * m.rank / m.world, end = tail * (m.rank + 1) / m.world;
        if (!v.diverged) m.timed_update(begin, end - begin);
        const double t0 = now_seconds();
        m.comm.barrier();
        const double dt = now_seconds() - t0;
        m.times.comm += dt;
        m.times.comm_wait += dt;
      }
    } else {
      if (m.rank == 0 && !v.diverged) m.timed_update(0, m.arenas.param_count);
      m.broadcast_weights();
      m.read_verdict(v);
    }
  }
  v.times = m.times;
  return v;
}

void GradientExchange::average_state() {
  Impl& m = *impl_;
  if (m.arenas.state_count == 0) return;
  allreduce_sum(m.comm, m.opt.algorithm, m.arenas.state, m.arenas.state_count);
  if (m.world > 1) scale(m.arenas.state, m.arenas.state_count, m.inv_world);
}

const std::vector<std::pair<int64_t, int64_t>>& GradientExchange::buckets() const { return impl_->buckets; }

}  // namespace ts
