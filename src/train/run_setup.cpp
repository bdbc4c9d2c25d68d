// The set-up phase of a run (see run_setup.h).
#include "train/run_setup.h"

#include <algorithm>
#include <cmath>
#include <string>
#include <utility>

#include "backend/backend_factory.h"
#include "backend/plan_choices.h"
#include "config/schema.h"
#include "dist/allreduce.h"
#include "core/error.h"
#include "core/memory_limits.h"
#include "core/preemption_signal.h"
#include "core/strings.h"
#include "nn/layers/conv2d.h"
#include "nn/layers/fully_connected.h"
#include "nn/models.h"
#include "train/loss_ledger.h"
#include "train/resources.h"

namespace ts {
namespace {

// The most samples a run may count (steps x global batch), small enough that no product of
// the run's counts overflows. The most steps is the range of `steps` (config/schema.cpp): the
// per-step records of a run are sized from its step count.
constexpr double kMaxRunSamples = 1e18;

std::string count_text(double v) {
  if (v < 9e18) return std::to_string(static_cast<int64_t>(v));
  return format_number("%.4g", v);
}

// The training length in steps, computed in double so that no product overflows before it is
// bounded (ConfigError naming the key that set the length).
int64_t total_steps_of(const PlanOptions& r, int64_t global_batch, int64_t steps_per_epoch) {
  const double steps = r.steps > 0           ? static_cast<double>(r.steps)
                       : r.train_samples > 0 ? std::ceil(static_cast<double>(r.train_samples) / static_cast<double>(global_batch))
                                             : std::ceil(r.epochs * static_cast<double>(steps_per_epoch));
  const double most = find_key_spec("steps")->range.hi;
  if (!(steps <= most) || !(steps * static_cast<double>(global_batch) <= kMaxRunSamples))
    throw ConfigError(r.length_key + ": the run would take " + count_text(steps) + " steps (" +
                      std::to_string(steps_per_epoch) + " per epoch at a global batch of " + std::to_string(global_batch) +
                      "), more than the " + count_text(most) + " steps or 1e18 samples a run may take (the range of "
                      "`steps`, docs/config.md); train shorter or with a larger batch");
  return std::max<int64_t>(static_cast<int64_t>(steps), 1);
}

// The step counts; an epoch is the training loader's: every full global batch of the split.
RunPlan plan_of(const PlanOptions& r, int64_t train_count, int world) {
  RunPlan p;
  p.batch = r.batch_for(world);
  p.global_batch = p.batch * world;
  // Unequal shares (dist.partition): the global batch as configured, whatever its split.
  if (r.partition != PartitionKind::equal && r.global_batch > 0) p.global_batch = r.global_batch;
  p.steps_per_epoch = train_count / p.global_batch;
  p.total_steps = total_steps_of(r, p.global_batch, p.steps_per_epoch);
  // An evaluation period beyond the run is the run's length (evaluations run at its end).
  const double eval_steps = std::round(r.eval_every_epochs * static_cast<double>(p.steps_per_epoch));
  p.eval_period = r.eval_every_epochs > 0
                      ? std::max<int64_t>(1, static_cast<int64_t>(std::min(eval_steps, static_cast<double>(p.total_steps))))
                      : 0;
  p.average_period = r.average_period;
  return p;
}

// This rank's backend with the run's threads, precision and (cuda) library choices. Collective:
// with ranks.backend only some ranks may lack their device or precision, and the others must
// not wait for them in the next collective.
std::unique_ptr<Backend> set_up_backend(const DeviceOptions& r, Communicator& comm) {
  std::unique_ptr<Backend> backend;
  std::string refusal;
  bool unsupported = false;  // what this machine cannot run: a campaign marks the point, not failed
  try {
    backend = make_backend(backend_kind_name(r.backend), comm.local_rank());  // cuda: the device NCCL uses
    backend->set_threads(r.threads);
    check_device(r, *backend);
  } catch (const NoDeviceError& e) {  // built, but no device here: exit 2 naming the key
    refusal = r.backend_key + ": " + e.what();
    unsupported = true;
  } catch (const UnsupportedError& e) {
    refusal = e.what();
    unsupported = true;
  } catch (const ConfigError& e) {
    refusal = e.what();
  }
  refuse_collectively(comm, refusal, unsupported);
  backend->set_precision(r.precision);
  if (PlanChoices* choices = capability<PlanChoices>(*backend)) {  // cuda: its libraries' algorithms
    choices->set_workspace_limit(static_cast<size_t>(r.cuda_workspace_mb) << 20);
    choices->set_algorithm_choice(r.cuda_algorithms);
    choices->set_conv_api(r.cuda_conv_api, r.cuda_reduced_precision_reduction);
  }
  return backend;
}

// Page-locked batch slots for a device the host cannot address (their copies to the device run
// asynchronously); the loader's aligned host memory otherwise.
SlotAllocator slot_allocator(Backend& backend) {
  if (backend.describe().host_accessible) return {};
  Backend* owner = &backend;
  return [owner](size_t bytes) {
    auto buffer = std::make_shared<DeviceBuffer>(owner->allocate_host(bytes));
    return std::shared_ptr<void>(buffer, buffer->data());
  };
}

}  // namespace

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

std::vector<WeightMatrix> weight_matrices_of(Net& net) {
  std::vector<WeightMatrix> matrices;
  for (int node = 0; node < net.node_count(); ++node) {
    const ParamRange range = net.param_range(node);
    if (range.count == 0) continue;
    // Weights come first in a layer's parameters, row-major (outputs, inputs...).
    if (const auto* conv = dynamic_cast<const Conv2d*>(net.layer(node))) {
      const ConvDesc& d = conv->desc();
      matrices.push_back({range.offset, d.oc, d.weight_count() / d.oc});
    } else if (const auto* fc = dynamic_cast<const FullyConnected*>(net.layer(node))) {
      matrices.push_back({range.offset, fc->desc().oc, fc->desc().ic});
    }
  }
  return matrices;
}

std::unique_ptr<ExchangeStrategy> set_up_exchange(const ExchangeOptions& given, Net& net, Communicator& comm) {
  ExchangeOptions options = given;
  if (options.compression.kind == CompressionKind::powersgd) options.compression.matrices = weight_matrices_of(net);
  const ArenaDevice device = arena_device_of(net.backend());
  if (comm.size() > 1 && options.algorithm == AllreduceAlgorithm::shm && options.strategy == DistStrategy::sync &&
      device.host_accessible)
    net.use_arena_storage(nullptr, allocate_shared_floats(comm, net.param_count()));
  auto exchange = make_exchange_strategy(
      comm, {net.params(), net.grads(), net.param_count(), net.state(), net.state_count(), device}, options);
  exchange->broadcast_model();
  return exchange;
}

std::unique_ptr<RunSetup> set_up_run(const SetupOptions& o, Communicator& comm, int64_t first_step,
                                     const ShareState* resumed_shares, Communicator* ps_world) {
  auto s = std::make_unique<RunSetup>();
  s->backend = set_up_backend(o.device, comm);
  const bool device_memory = !s->backend->describe().host_accessible;
  // hogwild: the replicas are the workers of the batch split and the shards of the data.
  const bool hogwild = o.exchange.strategy == DistStrategy::hogwild;
  const int replicas = hogwild ? o.hogwild_replicas : comm.size();
  InputPreparation prepared = prepare_input(o.dataset, comm);
  RunDataOptions data_options = o.data;  // read where input preparation says
  data_options.source.root = prepared.root;
  data_options.source.storage = prepared.storage;
  s->data = open_run_data(data_options, o.plan.batch_for(replicas), replicas, std::move(prepared));
  s->plan = plan_of(o.plan, s->data->train_count, replicas);
  s->loop = o.loop;
  stop_if_signalled_during_startup([] { return "the data set was open; the memory estimate and planning were next"; });
  // The memory check (collective) before anything large is allocated.
  s->memory = estimate_memory(o.memory, *s->backend, *s->data, s->plan.total_steps, comm, heap_bytes_in_use());
  s->memory_bound = memory_bound(o.memory, comm.local_size());
  s->memory_bound.device = device_memory_bound(*s->backend, comm.local_size());
  check_memory(o.memory, s->memory, s->memory_bound, comm);
  s->net = build_model(o.model.name, *s->backend, s->data->input, o.model.seed, o.model.dropout);
  s->shares = std::make_unique<ShareBalancer>(o.shares, comm.rank(), comm.size(), s->plan.global_batch, resumed_shares);
  TrainShare share;
  if (s->shares->active()) {
    ShareBalancer::LoaderShares from = s->shares->loader_shares(first_step);
    s->plan.batch = from.batch;
    share = {s->plan.global_batch, from.offset, s->shares->max_share(), std::move(from.later)};
  }
  start_loaders(data_options, *s->data, s->plan.batch, hogwild ? 0 : comm.rank(), replicas, slot_allocator(*s->backend),
                first_step, share, hogwild);
  s->net->set_batch(s->plan.batch);
  stop_if_signalled_during_startup([] { return "planning the model"; });
  if (o.cuda_graphs) {
    try {
      s->net->use_captured_forward(true);
    } catch (const ConfigError& e) {
      throw ConfigError(o.cuda_graphs_key + ": " + e.what());
    }
  }
  s->sgd = std::make_unique<Sgd>(*s->backend, s->net->param_count(), o.sgd);
  s->scaler = std::make_unique<LossScaler>(o.loss_scale.mode, o.loss_scale.init, o.loss_scale.growth_interval);
  if (device_memory) s->staged = std::make_unique<StagedInput>(*s->net, *s->data->train_loader);
  s->lr = std::make_unique<LearningRate>(o.lr, s->plan.global_batch, s->plan.steps_per_epoch, s->plan.total_steps);
  // Collective: the last step, after every local check. The shm window is set before the
  // communicator's first shm call (allocate_shared_floats sets it up).
  set_shm_window_options(o.shm);
  ExchangeOptions options = o.exchange;
  options.async_ps.world = ps_world;
  options.async_ps.total_steps = s->plan.total_steps;
  options.async_ps.global_batch = s->plan.global_batch;
  options.async_ps.steps_per_epoch = s->plan.steps_per_epoch;
  RunSetup* setup = s.get();
  options.hogwild = {s->plan.total_steps, [setup] {
                       if (setup->hogwild) setup->hogwild->join();
                     }};
  s->exchange = set_up_exchange(options, *s->net, comm);
  s->remote_model = dynamic_cast<RemoteModel*>(s->exchange.get());
  s->message_boundary = dynamic_cast<MessageBoundary*>(s->exchange.get());
  s->device_losses = dynamic_cast<DeviceLossCombiner*>(s->exchange.get());
  s->outside_peers = dynamic_cast<OutsidePeers*>(s->exchange.get());
  s->replicas_identical = s->exchange->replicas_identical() && !o.mixed_backends;
  // A device rank's compute time is its device's where shares are decided from it, or asked for.
  s->waits_for_device = s->staged != nullptr && (s->shares->active() || o.cuda_sync_phases);
  try {
    s->loss_reads = resolve_loss_reads(o.loss_reads, s->staged != nullptr, s->waits_for_device, *s->exchange,
                                     s->device_losses);
  } catch (const ConfigError& e) {
    throw ConfigError(o.loss_reads_key + ": " + e.what());
  }
  if (hogwild)
    s->hogwild = std::make_unique<HogwildCrew>(
        ReplicaOptions{replicas, backend_kind_name(o.device.backend), o.device.threads, o.model.name, o.model.seed,
                       o.model.dropout, o.sgd, data_options, s->data->prepared},
        s->net->params(), s->net->param_count(), s->plan.batch, s->plan.total_steps, *s->lr);
  return s;
}

}  // namespace ts
