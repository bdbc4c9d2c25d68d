// The set-up phase of a run (see run_setup.h).
#include "train/run_setup.h"

#include <algorithm>
#include <cmath>

#include "backend/backend_factory.h"
#include "config/schema.h"
#include "dist/allreduce.h"
#include "nn/models.h"
#include "train/capabilities.h"

namespace ts {
namespace {

RunPlan plan_of(const RunConfig& r, const Loader& train_loader, int world) {
  RunPlan p;
  p.batch = r.batch_for(world);
  p.global_batch = p.batch * world;
  p.steps_per_epoch = train_loader.batches_per_epoch();
  p.total_steps = r.steps > 0           ? r.steps
                  : r.train_samples > 0 ? (r.train_samples + p.global_batch - 1) / p.global_batch
                                        : static_cast<int64_t>(std::ceil(r.epochs * static_cast<double>(p.steps_per_epoch)));
  p.total_steps = std::max<int64_t>(p.total_steps, 1);
  p.eval_period = r.eval.every_epochs > 0
                      ? std::max<int64_t>(1, static_cast<int64_t>(std::llround(
                                                 r.eval.every_epochs * static_cast<double>(p.steps_per_epoch))))
                      : 0;
  p.average_period = r.dist.period;
  return p;
}

// The steps that `epochs` or `train_samples` come to obey the bound of `steps` (config/schema.cpp):
// the per-step records of the run are sized from the step count.
void check_total_steps(const ResolvedConfig& cfg, const RunPlan& plan) {
  const double most = find_key_spec("steps")->range.hi;
  if (static_cast<double>(plan.total_steps) <= most) return;
  const RunConfig& r = cfg.run;
  const std::string key = r.epochs > 0 ? "epochs" : "train_samples";
  throw ConfigError(cfg.locate(key) + ": the run would take " + std::to_string(plan.total_steps) + " steps (" +
                    std::to_string(plan.steps_per_epoch) + " per epoch at a global batch of " +
                    std::to_string(plan.global_batch) + "), more than the " + std::to_string(static_cast<int64_t>(most)) +
                    " a run may take (the range of `steps`, docs/config.md); train shorter or with a larger batch");
}

}  // namespace

ExchangeOptions exchange_options_of(const DistConfig& dist) {
  ExchangeOptions options;
  options.strategy = dist.strategy;
  options.algorithm = dist.allreduce;
  options.bucket_elements = std::max<int64_t>(1, static_cast<int64_t>(dist.bucket_mb * 1024.0 * 1024.0 / sizeof(float)));
  options.overlap = dist.overlap;
  return options;
}

ArenaDevice arena_device_of(Backend& backend) {
  ArenaDevice device;
  device.host_accessible = backend.describe().host_accessible;
  if (!device.host_accessible) {
    const BackendQueue queue = backend_queue(backend);
    device.cuda_device = queue.device;
    device.compute_stream = queue.stream;
  }
  return device;
}

std::unique_ptr<ExchangeStrategy> set_up_exchange(const ExchangeOptions& options, Net& net, Communicator& comm) {
  const ArenaDevice device = arena_device_of(net.backend());
  if (comm.size() > 1 && options.algorithm == AllreduceAlgorithm::shm && options.strategy == DistStrategy::sync &&
      device.host_accessible)
    net.use_arena_storage(nullptr, allocate_shared_floats(comm, net.param_count()));
  auto exchange = make_exchange_strategy(
      comm, {net.params(), net.grads(), net.param_count(), net.state(), net.state_count(), device}, options);
  exchange->broadcast_model();
  return exchange;
}

std::unique_ptr<RunSetup> set_up_run(const ResolvedConfig& cfg, Communicator& comm) {
  const RunConfig& r = cfg.run;
  auto s = std::make_unique<RunSetup>();
  try {
    s->backend = make_backend(backend_kind_name(r.backend), comm.local_rank());  // cuda: the device NCCL uses
  } catch (const NoDeviceError& e) {  // built, but no device here: exit 2 naming the key
    throw ConfigError(cfg.locate("backend") + ": " + e.what());
  }
  s->backend->set_threads(r.threads);
  check_device(cfg, *s->backend);
  s->backend->set_precision(r.precision);
  s->backend->set_workspace_limit(static_cast<size_t>(r.cuda_workspace_mb) << 20);
  const bool device_memory = !s->backend->describe().host_accessible;
  SlotAllocator slots;
  if (device_memory) {  // page-locked batch slots: their copies to the device run asynchronously
    Backend* backend = s->backend.get();
    slots = [backend](size_t bytes) {
      auto buffer = std::make_shared<DeviceBuffer>(backend->allocate_host(bytes));
      return std::shared_ptr<void>(buffer, buffer->data());
    };
  }
  s->data = set_up_data(cfg, r.batch_for(comm.size()), comm.rank(), comm.size(), std::move(slots));
  s->plan = plan_of(r, *s->data->train_loader, comm.size());
  check_total_steps(cfg, s->plan);
  s->net = build_model(r.model, *s->backend, s->data->input, r.seed, r.dropout);
  s->net->set_batch(s->plan.batch);
  if (r.cuda_graphs) {
    try {
      s->net->use_captured_forward(true);
    } catch (const ConfigError& e) {
      throw ConfigError(cfg.locate("cuda.graphs") + ": " + e.what());
    }
  }
  SgdOptions sgd;
  sgd.momentum = r.momentum;
  sgd.weight_decay = r.weight_decay;
  sgd.nesterov = r.nesterov;
  s->sgd = std::make_unique<Sgd>(*s->backend, s->net->param_count(), sgd);
  s->scaler = std::make_unique<LossScaler>(LossScaler::from_config(r));
  if (device_memory) s->staged = std::make_unique<StagedInput>(*s->net, *s->data->train_loader);
  s->lr = std::make_unique<LearningRate>(r, s->plan.global_batch, s->plan.steps_per_epoch, s->plan.total_steps);
  // Collective: the last step, after every local check. The shm window is set before the
  // communicator's first shm call (allocate_shared_floats sets it up).
  set_shm_window_options({r.dist.shm_chunk_kb * 1024, static_cast<int>(r.dist.shm_buffers)});
  s->exchange = set_up_exchange(exchange_options_of(r.dist), *s->net, comm);
  return s;
}

}  // namespace ts
