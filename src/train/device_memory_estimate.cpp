// The device half of the memory check (see device_memory_estimate.h).
#include "train/device_memory_estimate.h"

#include <algorithm>
#include <memory>
#include <sstream>

#include "backend/plan_choices.h"
#include "core/error.h"
#include "core/memory_limits.h"
#include "nn/net.h"

namespace ts {
namespace {

int64_t used_now(Backend& backend) {
  backend.synchronize();  // frees and allocations the queue still holds are done
  return backend.device_memory().used;
}

// The device memory `net` takes above `base` when planned at `batch`.
int64_t planned_device_bytes(Net& net, int64_t batch, Backend& backend, int64_t base) {
  net.set_batch(batch);
  return used_now(backend) - base;
}

}  // namespace

int64_t DeviceMemoryEstimate::total() const {
  return parameters + optimizer + std::max(activations_train, activations_eval) + input;
}

std::map<std::string, int64_t> DeviceMemoryEstimate::named() const {
  if (!applies) return {};
  return {{"device_estimate_bytes", total()},
          {"device_parameters_bytes", parameters},
          {"device_optimizer_bytes", optimizer},
          {"device_activations_train_bytes", activations_train},
          {"device_activations_eval_bytes", activations_eval},
          {"device_input_bytes", input},
          {"device_used_at_check_bytes", used_at_check}};
}

std::string DeviceMemoryEstimate::text() const {
  std::ostringstream out;
  out << bytes_text(total()) << " (parameters " << bytes_text(parameters) << ", optimizer " << bytes_text(optimizer)
      << ", activations " << bytes_text(activations_train) << " at the training batch and "
      << bytes_text(activations_eval) << " at the evaluation batch, staged input " << bytes_text(input) << ")";
  return out.str();
}

DeviceMemoryEstimate estimate_device_memory(const ModelOptions& model, double momentum, Backend& backend,
                                            const ModelInput& input, int64_t batch, int64_t eval_batch) {
  DeviceMemoryEstimate e;
  if (backend.describe().host_accessible || backend.device_memory().total <= 0) return e;
  e.applies = true;
  e.used_at_check = used_now(backend);
  PlanChoices* choices = capability<PlanChoices>(backend);
  const size_t notes_before = choices ? choices->plan_notes().size() : 0;
  try {
    std::unique_ptr<Net> probe = build_model(model.name, backend, input, model.seed, model.dropout);
    const int64_t params = probe->param_count();
    e.parameters = std::max<int64_t>(used_now(backend) - e.used_at_check, (2 * params + probe->state_count()) * 4);
    e.optimizer = momentum > 0 ? params * 4 : 0;
    // As on the host: the small batch is planned again after the large one, so both points
    // find the same cached plans (cuDNN's algorithm choices, converted weights).
    const int64_t base = e.used_at_check + e.parameters;
    planned_device_bytes(*probe, kDeviceProbeBatchSmall, backend, base);
    const int64_t large = planned_device_bytes(*probe, kDeviceProbeBatchLarge, backend, base);
    const int64_t small = planned_device_bytes(*probe, kDeviceProbeBatchSmall, backend, base);
    e.activation_per_sample = std::max<int64_t>(0, (large - small) / (kDeviceProbeBatchLarge - kDeviceProbeBatchSmall));
    const int64_t fixed = std::max<int64_t>(0, small - kDeviceProbeBatchSmall * e.activation_per_sample);
    e.activations_train = fixed + batch * e.activation_per_sample;
    e.activations_eval = fixed + eval_batch * e.activation_per_sample;
  } catch (const RuntimeError& err) {  // the probe's memory is given back as it unwinds
    e.probe_error = err.what();
  }
  if (choices) choices->drop_plan_notes(notes_before);  // the run file lists the run's plans, not the probe's
  backend.synchronize();
  e.input = 2 * batch * input.sample.numel() * static_cast<int64_t>(sizeof(float));
  return e;
}

DeviceMemoryBound device_memory_bound(Backend& backend, int local_ranks) {
  DeviceMemoryBound b;
  const DeviceMemoryUse m = backend.device_memory();
  if (m.total <= 0) return b;
  const DeviceDescription d = backend.describe();
  // Ranks of a node take devices round-robin (local rank modulo devices): the most on one device.
  const int devices = std::max(m.devices, 1);
  const int sharing = (std::max(local_ranks, 1) + devices - 1) / devices;
  b.bytes = m.free / sharing;
  b.source = d.device + " (" + d.name + ") has " + bytes_text(m.free) + " free of " + bytes_text(m.total) +
             (sharing > 1 ? ", shared by the " + std::to_string(sharing) + " ranks of this node on it" : "");
  return b;
}

}  // namespace ts
