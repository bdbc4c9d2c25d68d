// The memory estimate and check of a run (see memory_estimate.h).
#include "train/memory_estimate.h"

#include <malloc.h>

#include <algorithm>
#include <cctype>
#include <memory>
#include <sstream>
#include <vector>

#include "core/error.h"
#include "core/host_info.h"
#include "core/memory_limits.h"
#include "nn/models.h"
#include "train/phases.h"
#include "train/resources.h"

namespace ts {
namespace {

// The batches the activations are measured at (two points of a line: fixed + batch x per sample).
constexpr int64_t kProbeBatchSmall = 2, kProbeBatchLarge = 4;
// What each thread still to start reserves of the address space: its stack (8 MiB by default)
// and, for glibc, a malloc arena (64 MiB reserved on 64-bit). Counted against RLIMIT_AS only.
constexpr int64_t kThreadAddressSpace = int64_t{72} << 20;
// Bytes one step adds to a rank's records (train/recording.h: step, samples, epoch, time: 8
// each; lr, loss: 4 each; one float per phase).
constexpr int64_t kRecordBytesPerStep = 4 * 8 + 2 * 4 + 4 * static_cast<int64_t>(kPhaseCount);

// The heap `net` takes when planned at `batch` (its earlier plan's buffers are freed first).
int64_t planned_bytes(Net& net, int64_t batch, int64_t heap_before) {
  net.set_batch(batch);
  return heap_bytes_in_use() - heap_before;
}

// The evaluation loader's batch and its batches per pass on this rank (train/data_setup.cpp).
std::pair<int64_t, int64_t> eval_batches(const MemoryOptions& o, const RunData& data, int rank, int world) {
  const int64_t batch = std::min<int64_t>(o.eval_batch, std::max<int64_t>(data.test_count / world, 1));
  const int64_t shard = (rank + 1) * data.test_count / world - rank * data.test_count / world;
  return {batch, std::max<int64_t>(1, (shard + batch - 1) / batch)};
}

int64_t loader_bytes(const MemoryOptions& o, const RunData& data, int64_t batch, int rank, int world) {
  const int64_t per_sample = data.input.sample.numel() * 4 + (data.input.outputs > 0 ? data.input.outputs * 4 : 4);
  const auto [eval_batch, eval_passes] = eval_batches(o, data, rank, world);
  const int64_t eval_slots = std::min<int64_t>(o.prefetch, eval_passes) + 1;
  return (static_cast<int64_t>(o.prefetch) + 1) * batch * per_sample + eval_slots * eval_batch * per_sample;
}

// The exchange strategy's buffers (dist/*_strategy.cpp): a staging bucket (weight_avg: all the
// weights and state), the algorithms' scratch, the parameter server's gathered buckets on rank
// 0, and shm's window plus the other ranks' gradient arenas it reads in place.
int64_t exchange_bytes(const MemoryOptions& o, int64_t params, int64_t state, Communicator& comm) {
  const int64_t bucket = std::min<int64_t>(params, static_cast<int64_t>(o.bucket_mb * (1 << 20) / 4)) * 4;
  const bool weight_avg = o.strategy == DistStrategy::weight_avg;
  int64_t bytes = weight_avg ? (params + state) * 4 : bucket;
  if (comm.size() == 1) return bytes;
  bytes += bucket;
  if (o.allreduce == AllreduceAlgorithm::ps && comm.rank() == 0) bytes += bucket * comm.size();
  if (o.allreduce == AllreduceAlgorithm::shm) {
    bytes += o.shm_chunk_kb * 1024 * o.shm_buffers * comm.local_size();
    if (!weight_avg) bytes += params * 4 * (comm.local_size() - 1);
  }
  return bytes;
}

// Steps x bytes per step on every rank; rank 0 also gathers every rank's timings and losses,
// lays them out again for the file and builds the file in memory.
int64_t recording_bytes(int64_t total_steps, Communicator& comm) {
  int64_t bytes = total_steps * kRecordBytesPerStep;
  if (comm.rank() == 0)
    bytes += total_steps * (comm.size() * (static_cast<int64_t>(kPhaseCount) + 1) * 4 * 3 + kRecordBytesPerStep);
  return bytes;
}

// The bound one limit puts on this rank's peak resident memory.
int64_t bound_of(const MemoryLimit& limit, const ProcessMemory& now, int local_ranks, int64_t threads_to_start) {
  switch (limit.scope) {
    case MemoryLimit::Scope::node: return limit.bytes / local_ranks;
    case MemoryLimit::Scope::node_available: return now.rss + limit.bytes / local_ranks;
    case MemoryLimit::Scope::process_address_space:
      return now.rss + limit.bytes - now.address_space - threads_to_start * kThreadAddressSpace;
    case MemoryLimit::Scope::process_data: return now.rss + limit.bytes - now.data;
  }
  return limit.bytes;
}

std::string limit_text(const MemoryLimit& limit, const ProcessMemory& now, int local_ranks) {
  std::string text = limit.source + " " + bytes_text(limit.bytes);
  switch (limit.scope) {
    case MemoryLimit::Scope::node:
    case MemoryLimit::Scope::node_available:
      if (local_ranks > 1) text += " shared by the " + std::to_string(local_ranks) + " ranks of this node";
      break;
    case MemoryLimit::Scope::process_address_space:
      text += ", of which the process maps " + bytes_text(now.address_space) + " now (and each thread still to start "
              "reserves " + bytes_text(kThreadAddressSpace) + ")";
      break;
    case MemoryLimit::Scope::process_data:
      text += ", of which the process uses " + bytes_text(now.data) + " now";
      break;
  }
  return text;
}

// What to change, the largest tunable parts first.
std::string advice(const MemoryOptions& o, const MemoryEstimate& e) {
  std::vector<std::pair<int64_t, std::string>> parts = {
      {e.activations_train, "lower " + std::string(o.batch_per_worker > 0 ? "batch_per_worker" : "global_batch") +
                                " (each sample of batch adds " + bytes_text(e.activation_per_sample) +
                                " of activations) or use more workers"},
      {e.activations_eval, "lower eval.batch"},
      {e.loader, "lower dataset.prefetch"},
      {e.recording, "shorten the run (steps, epochs or train_samples)"},
      {e.parameters + e.optimizer, "run a smaller model"}};
  std::sort(parts.begin(), parts.end(), [](const auto& a, const auto& b) { return a.first > b.first; });
  std::string text;
  for (size_t i = 0; i < 3 && i < parts.size(); ++i) text += (i ? "; " : "") + parts[i].second;
  text[0] = static_cast<char>(std::toupper(static_cast<unsigned char>(text[0])));
  return text + "; or run where more memory is allowed";
}

// The most samples one rank may take in a step: the equal split's, or with dist.partition the
// largest static share, or the largest share measured shares may come to (a quantum per other rank).
int64_t largest_batch(const MemoryOptions& o, int world) {
  const int64_t equal = o.batch_per_worker > 0 ? o.batch_per_worker : o.global_batch / world;
  if (world < 2 || o.partition == PartitionKind::equal) return equal;
  if (o.partition == PartitionKind::static_ && !o.shares.empty()) return *std::max_element(o.shares.begin(), o.shares.end());
  const int64_t global = o.global_batch > 0 ? o.global_batch : o.batch_per_worker * world;
  return std::max<int64_t>(equal, global - o.share_quantum * (world - 1));
}

}  // namespace

int64_t MemoryEstimate::total() const {
  return process + parameters + optimizer + std::max(activations_train, activations_eval) + loader + exchange +
         recording;
}

std::map<std::string, int64_t> MemoryEstimate::named() const {
  std::map<std::string, int64_t> names = device.named();
  names.merge(std::map<std::string, int64_t>{{"estimate_bytes", total()},        {"process_bytes", process},
          {"parameters_bytes", parameters},   {"optimizer_bytes", optimizer},
          {"activations_train_bytes", activations_train}, {"activations_eval_bytes", activations_eval},
          {"loader_bytes", loader},           {"exchange_bytes", exchange},
          {"recording_bytes", recording}});
  return names;
}

std::string MemoryEstimate::text() const {
  std::ostringstream out;
  out << bytes_text(total()) << " (process " << bytes_text(process) << ", parameters " << bytes_text(parameters)
      << ", optimizer " << bytes_text(optimizer) << ", activations "
      << (activations_measured ? bytes_text(activations_train) + " at the training batch and " +
                                     bytes_text(activations_eval) + " at the evaluation batch"
                               : std::string("in device memory (not counted)"))
      << ", loader " << bytes_text(loader) << ", exchange " << bytes_text(exchange) << ", records "
      << bytes_text(recording) << ")";
  return out.str();
}

MemoryEstimate estimate_memory(const MemoryOptions& o, Backend& backend, const RunData& data, int64_t total_steps,
                               Communicator& comm, int64_t heap_before_model) {
  const int64_t batch = largest_batch(o, comm.size());
  MemoryEstimate e;
  e.activations_measured = backend.describe().host_accessible;
  if (e.activations_measured) {  // device memory is the device's (a GPU's allocations name their buffers)
    // A probe copy of the model, planned and dropped: everything it held (its layers' buffers
    // and temporaries too) is freed before the real model is built and planned once.
    std::unique_ptr<Net> probe = build_model(o.model.name, backend, data.input, o.model.seed, o.model.dropout);
    const int64_t params = probe->param_count(), state = probe->state_count();
    e.parameters = (2 * params + state) * 4;
    e.optimizer = o.momentum > 0 ? params * 4 : 0;
    e.exchange = exchange_bytes(o, params, state, comm);
    // The small batch is planned twice: its second plan finds the backend's caches (primitives
    // of both batches) as the large one did, so the difference is the batch's alone.
    const int64_t heap = heap_bytes_in_use();
    planned_bytes(*probe, kProbeBatchSmall, heap);
    const int64_t large = planned_bytes(*probe, kProbeBatchLarge, heap);
    const int64_t small = planned_bytes(*probe, kProbeBatchSmall, heap);
    probe.reset();
    ::malloc_trim(0);  // give the probe's memory back to the system
    e.activation_per_sample = std::max<int64_t>(0, (large - small) / (kProbeBatchLarge - kProbeBatchSmall));
    const int64_t fixed = std::max<int64_t>(0, small - kProbeBatchSmall * e.activation_per_sample);
    e.activations_train = fixed + batch * e.activation_per_sample;
    e.activations_eval = fixed + eval_batches(o, data, comm.rank(), comm.size()).first * e.activation_per_sample;
  }
  e.device = estimate_device_memory(o.model, o.momentum, backend, data.input, batch,
                                    eval_batches(o, data, comm.rank(), comm.size()).first);
  // Resident now and not heap taken since heap_before_model (what the probe left in the
  // backend's caches is counted in the activations): code, libraries, MPI, data in memory.
  e.process = std::max<int64_t>(0, process_memory().rss - (heap_bytes_in_use() - heap_before_model));
  e.loader = loader_bytes(o, data, batch, comm.rank(), comm.size());
  e.recording = recording_bytes(total_steps, comm);
  return e;
}

MemoryBound memory_bound(const MemoryOptions& o, int local_ranks) {
  const ProcessMemory now = process_memory();
  const int64_t threads_to_start = o.threads + 2 * o.loader_threads + 2;  // + comm thread, watchdog
  MemoryBound bound;
  std::vector<std::pair<int64_t, std::string>> found;
  for (const MemoryLimit& limit : memory_limits())
    found.emplace_back(bound_of(limit, now, std::max(local_ranks, 1), threads_to_start),
                       limit_text(limit, now, std::max(local_ranks, 1)));
  if (found.empty()) return bound;
  std::sort(found.begin(), found.end());
  bound.bytes = std::max<int64_t>(found.front().first, 0);
  bound.source = found.front().second;
  for (size_t i = 1; i < found.size(); ++i) bound.others += (i > 1 ? "; " : "") + found[i].second;
  return bound;
}

void check_memory(const MemoryOptions& o, const MemoryEstimate& e, const MemoryBound& bound, Communicator& comm) {
  std::string refusal;
  if (bound.bytes > 0 && e.total() > bound.bytes)
    refusal = "memory: this run needs about " + e.text() + " on rank " + std::to_string(comm.rank()) + " (host " +
              host_name() + "), but a rank may use at most " + bytes_text(bound.bytes) + " here: " + bound.source +
              (bound.others.empty() ? "" : " (other limits: " + bound.others + ")") + ". " + advice(o, e);
  const DeviceMemoryEstimate& d = e.device;
  if (refusal.empty() && d.applies && !d.probe_error.empty())
    refusal = "device memory: a probe of the model (planned at batches " + std::to_string(kDeviceProbeBatchSmall) +
              " and " + std::to_string(kDeviceProbeBatchLarge) + ") does not fit on rank " +
              std::to_string(comm.rank()) +
              " (host " + host_name() + "; " + bound.device.source + "): " + d.probe_error +
              ". Run a smaller model or where the device has more memory free";
  if (refusal.empty() && d.applies && bound.device.bytes > 0 && d.total() > bound.device.bytes)
    refusal = "device memory: this run needs about " + d.text() + " on rank " + std::to_string(comm.rank()) +
              " (host " + host_name() + "), but " + bound.device.source + ". Lower " +
              (o.batch_per_worker > 0 ? "batch_per_worker" : "global_batch") + " (each sample of batch adds " +
              bytes_text(d.activation_per_sample) + " on the device) or eval.batch, use more workers or a smaller " +
              "model, or run where the device has more memory free";
  refuse_collectively(comm, refusal);
}

}  // namespace ts
