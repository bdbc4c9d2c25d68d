// Checkpoint I/O per storage (see checkpoint_bench.h).
#include "train/checkpoint_bench.h"

#include <unistd.h>

#include <algorithm>
#include <cstring>

#include "backend/backend_factory.h"
#include "core/error.h"
#include "core/host_info.h"
#include "core/rng.h"
#include "core/timer.h"
#include "data/checkpoint_store.h"
#include "data/crc32c.h"
#include "nn/models.h"
#include "train/summary.h"

namespace ts {
namespace {

// Pseudo-random bytes (incompressible), a function of the seed alone.
std::vector<char> checkpoint_payload(int64_t bytes, uint64_t seed) {
  std::vector<char> data(static_cast<size_t>(bytes));
  Rng rng(seed);
  for (size_t i = 0; i + 8 <= data.size(); i += 8) {
    const uint64_t word = rng.next_u64();
    std::memcpy(&data[i], &word, 8);
  }
  for (size_t i = data.size() / 8 * 8; i < data.size(); ++i) data[i] = static_cast<char>(i);
  return data;
}

double gbps(int64_t bytes, const std::vector<double>& seconds) {
  const double median = percentile(seconds, 50);
  return median > 0 ? static_cast<double>(bytes) / median / 1e9 : 0;
}

}  // namespace

int64_t checkpoint_bytes_of(const std::string& model, int64_t* parameters, int64_t* state) {
  std::unique_ptr<Backend> backend = make_backend("ref");
  std::unique_ptr<Net> net = build_model_graph(model, *backend, model_expected_input(model));
  int64_t p = 0, s = 0;
  for (const auto& row : net->layer_table()) p += row.parameters;
  for (int node = 1; node < net->node_count(); ++node) s += net->layer(node)->state_count();
  if (parameters) *parameters = p;
  if (state) *state = s;
  return 4 * (2 * p + s);
}

CheckpointBenchResult run_checkpoint_bench(const CheckpointBenchOptions& options) {
  if (options.repeats < 1 || options.repeats > 1000)
    throw ConfigError("--repeats " + std::to_string(options.repeats) + ": give 1..1000 repeats");
  CheckpointBenchResult r;
  r.options = options;
  r.bytes = checkpoint_bytes_of(options.model, &r.parameters, &r.state);
  std::unique_ptr<CheckpointStore> store = make_checkpoint_store(options.storage, options.root, options.endpoint);
  const FileSystemType fs = store->file_system();
  r.file_system = fs.name;
  if (options.storage == "nfs" && !fs.network)
    r.note = "storage nfs, but " + options.root + " is on " + fs.name + ", not a network file system";
  const std::vector<char> payload = checkpoint_payload(r.bytes, options.seed);
  const uint32_t written = crc32c(payload.data(), payload.size());
  std::vector<char> back(payload.size());
  const std::string key = "trainscale-checkpoint-" + options.model + "-" + host_name() + "-" + std::to_string(::getpid());
  for (int k = 0; k < options.repeats; ++k) {
    const double t0 = now_seconds();
    store->write(key, payload.data(), r.bytes);
    const double t1 = now_seconds();
    std::fill(back.begin(), back.end(), 0);
    store->read_from_storage(key, back.data(), r.bytes);
    const double t2 = now_seconds();
    store->remove(key);
    if (crc32c(back.data(), back.size()) != written)
      throw RuntimeError("checkpoint store " + store->root() + "/" + key + ": the bytes read back differ from those "
                         "written (CRC-32C mismatch, repeat " + std::to_string(k + 1) + ")");
    r.write_seconds.push_back(t1 - t0);
    r.read_seconds.push_back(t2 - t1);
  }
  r.write_gbps = gbps(r.bytes, r.write_seconds);
  r.read_gbps = gbps(r.bytes, r.read_seconds);
  return r;
}

}  // namespace ts
