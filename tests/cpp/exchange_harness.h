// Shared by the exchange tests (test_cuda_nccl.cpp, test_cuda_mpi_staging.cpp,
// test_mpi_device_sum.cpp): a few training steps of an exchange strategy on a model's arenas in
// one backend's memory (the ref backend's host memory, or the cuda backend's device memory),
// with the same data on every backend, so that a device run can be compared with the host run
// of the MPI algorithms.
//
// Each rank starts from its own parameters and state (so broadcast_model matters), "backward"
// writes rank- and step-dependent gradients into the arena from the top in uneven ranges and
// reports each (gradients_ready), the update is the Sgd of the backend (momentum, weight decay)
// and the strategy's state average runs at the end.
#pragma once

#include <gtest/gtest.h>

#include <algorithm>
#include <cmath>
#include <cstdint>
#include <functional>
#include <limits>
#include <memory>
#include <string>
#include <vector>

#include "backend/backend_factory.h"
#include "dist/device_loss_combiner.h"
#include "dist/exchange_strategy.h"
#include "nn/optimizer.h"

namespace ts::testing_support {

constexpr int64_t kParams = 70001;  // with 8192-float buckets: 8 full buckets, a partial one, the tail
constexpr int64_t kState = 37;
constexpr int64_t kBucket = 8192;

inline float initial_param(int rank, int64_t i) { return 0.01f * static_cast<float>((i * 7 + rank * 3) % 101) - 0.5f; }
inline float initial_state(int rank, int64_t i) { return 0.25f * static_cast<float>((i + rank) % 9) + rank; }
inline float gradient(int rank, int step, int64_t i) {
  return 0.001f * static_cast<float>((i * 13 + step * 5 + rank * 11) % 97 - 48);
}
inline float loss_of(int rank, int step) { return 1.0f + 0.125f * static_cast<float>(rank) + 0.0625f * static_cast<float>(step); }

// Where `backend` keeps arenas (as train/run_setup.cpp's arena_device_of says it).
inline ArenaDevice arena_device(Backend& backend) {
  ArenaDevice device;
  device.host_accessible = backend.describe().host_accessible;
  if (!device.host_accessible) {
    const BackendQueue queue = backend_queue(backend);
    device.cuda_device = queue.device;
    device.compute_stream = queue.stream;
  }
  return device;
}

struct ExchangeRun {
  std::vector<float> params, state;  // at the end, after average_state
  std::vector<StepVerdict> verdicts;
  ArenaTransport transport = ArenaTransport::host;
};

// A NaN loss on `nan_rank` at step `nan_step` (-1: none). weight_avg averages every `period`
// steps and at the last one. losses_on_device: each step's loss is handed over in device memory
// (LocalLoss::on_device, as half its value with weight 2), and the verdicts that come back with
// a combined_id are completed from DeviceLossCombiner::combined after the last step (loss_reads:
// log with nccl).
struct RunSettings {
  int steps = 4;
  int period = 1;
  int nan_rank = -1, nan_step = -1;
  bool losses_on_device = false;
};

inline std::vector<float> download(Backend& backend, const float* src, int64_t count) {
  std::vector<float> host(static_cast<size_t>(count));
  backend.synchronize();
  if (count > 0) backend.copy_to_host(host.data(), src, host.size() * sizeof(float));
  return host;
}

inline void upload(Backend& backend, float* dst, const std::vector<float>& host) {
  if (!host.empty()) backend.copy_from_host(dst, host.data(), host.size() * sizeof(float));
}

// Makes the strategy under test (default: make_exchange_strategy, the trainer's factory).
using MakeExchange = std::function<std::unique_ptr<ExchangeStrategy>(Communicator&, const ModelArenas&)>;

inline ExchangeRun run_exchange(Backend& backend, Communicator& comm, const ExchangeOptions& options,
                                const RunSettings& run = {}, const MakeExchange& make = {}) {
  const int rank = comm.rank();
  DeviceBuffer params = backend.allocate(kParams * sizeof(float));
  DeviceBuffer grads = backend.allocate(kParams * sizeof(float));
  DeviceBuffer state = backend.allocate(kState * sizeof(float));
  std::vector<float> p(kParams), s(kState);
  for (int64_t i = 0; i < kParams; ++i) p[static_cast<size_t>(i)] = initial_param(rank, i);
  for (int64_t i = 0; i < kState; ++i) s[static_cast<size_t>(i)] = initial_state(rank, i);
  upload(backend, params.f32(), p);
  upload(backend, state.f32(), s);
  SgdOptions sgd_options;
  sgd_options.momentum = 0.9;
  sgd_options.weight_decay = 1e-4;
  Sgd sgd(backend, kParams, sgd_options);
  const ModelArenas arenas{params.f32(), grads.f32(), kParams, state.f32(), kState, arena_device(backend)};
  auto exchange = make ? make(comm, arenas) : make_exchange_strategy(comm, arenas, options);
  exchange->broadcast_model();
  DeviceBuffer device_losses = backend.allocate(static_cast<size_t>(run.steps) * sizeof(float));

  ExchangeRun out;
  std::vector<std::vector<float>> grads_host(static_cast<size_t>(run.steps), std::vector<float>(kParams));
  for (int step = 0; step < run.steps; ++step) {
    const float loss = rank == run.nan_rank && step == run.nan_step ? std::numeric_limits<float>::quiet_NaN()
                                                                     : loss_of(rank, step);
    LocalLoss local_loss(loss);
    if (run.losses_on_device) {
      const float half = loss / 2;
      backend.copy_from_host(device_losses.f32() + step, &half, sizeof(float));
      local_loss = LocalLoss::on_device(device_losses.f32() + step, 2.0f);
    }
    exchange->begin_step(std::move(local_loss), [&](int64_t offset, int64_t count) {
      sgd.step_range(params.f32(), grads.f32(), 0.1, offset, count);
    });
    // Backward from the top in uneven "layers" (each kept alive: copies may read it later).
    std::vector<float>& g = grads_host[static_cast<size_t>(step)];
    int64_t top = kParams, layer = 0;
    while (top > 0) {
      const int64_t begin = std::max<int64_t>(0, top - (1000 + 3517 * (layer++ % 5)));
      for (int64_t i = begin; i < top; ++i) g[static_cast<size_t>(i)] = gradient(rank, step, i);
      backend.copy_from_host(grads.f32() + begin, g.data() + begin, static_cast<size_t>(top - begin) * sizeof(float));
      exchange->gradients_ready(begin, top - begin);
      top = begin;
    }
    const bool last = step + 1 == run.steps;
    out.verdicts.push_back(exchange->finish_step(last || (step + 1) % run.period == 0));
  }
  for (StepVerdict& v : out.verdicts) {
    if (v.combined_id == 0) continue;
    const CombinedStep c = dynamic_cast<DeviceLossCombiner&>(*exchange).combined(v.combined_id);  // or bad_cast
    v.loss = c.loss;
    v.times.comm = c.comm;
  }
  exchange->average_state();
  out.params = download(backend, params.f32(), kParams);
  out.state = download(backend, state.f32(), kState);
  out.transport = exchange->transport();
  return out;
}

// Two runs agree: parameters and state within `rel` (relative to max(1, |reference|)), the
// same verdicts and mean losses.
inline void expect_same_run(const ExchangeRun& got, const ExchangeRun& want, double rel, const std::string& what) {
  ASSERT_EQ(got.params.size(), want.params.size()) << what;
  int64_t reported = 0;
  for (size_t i = 0; i < want.params.size() && reported < 5; ++i)
    if (std::fabs(got.params[i] - want.params[i]) > rel * std::max(1.0f, std::fabs(want.params[i])))
      ADD_FAILURE() << what << ": param " << i << " is " << got.params[i] << ", want " << want.params[i], ++reported;
  for (size_t i = 0; i < want.state.size(); ++i)
    EXPECT_NEAR(got.state[i], want.state[i], rel * std::max(1.0f, std::fabs(want.state[i]))) << what << ": state " << i;
  ASSERT_EQ(got.verdicts.size(), want.verdicts.size()) << what;
  for (size_t s = 0; s < want.verdicts.size(); ++s) {
    EXPECT_EQ(got.verdicts[s].diverged, want.verdicts[s].diverged) << what << ": step " << s;
    EXPECT_EQ(got.verdicts[s].exchanged, want.verdicts[s].exchanged) << what << ": step " << s;
    if (!want.verdicts[s].diverged)
      EXPECT_NEAR(got.verdicts[s].loss, want.verdicts[s].loss, 1e-6) << what << ": loss of step " << s;
  }
}

}  // namespace ts::testing_support
