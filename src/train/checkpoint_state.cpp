// One rank's checkpoint state (see checkpoint_state.h).
#include "train/checkpoint_state.h"

#include "core/error.h"

namespace ts {
namespace {

std::vector<float> device_floats(Backend& backend, const float* src, int64_t count) {
  std::vector<float> host(static_cast<size_t>(count));
  if (count > 0) backend.copy_to_host(host.data(), src, host.size() * sizeof(float));  // waits for the queue
  return host;
}

void put_device_floats(Backend& backend, float* dst, const std::vector<float>& values, int64_t count,
                       const char* what) {
  TS_CHECK(static_cast<int64_t>(values.size()) == count,
           std::string("checkpoint: ") + what + " holds " + std::to_string(values.size()) + " values, the model " +
               std::to_string(count) + " (a checkpoint of another model?)");
  if (count > 0) backend.copy_from_host(dst, values.data(), values.size() * sizeof(float));
}

// The fields of a rank's state before its named series, in their byte order.
template <typename R>
auto plain_fields(R& r) {
  return std::tie(r.loader_position, r.rng, r.state, r.params, r.velocity, r.strategy, r.loss_scale,
                  r.loss_scale_good_steps, r.skipped_steps, r.train_clock, r.share_changes, r.share_window_seconds,
                  r.share_window_samples, r.loss);
}

template <typename T>
void get_into(ByteReader& in, T& value) {
  value = in.get<T>();
}
template <typename T>
void get_into(ByteReader& in, std::vector<T>& values) {
  values = in.get_vector<T>();
}

}  // namespace

RankCheckpoint capture_rank_state(const RunRecording& rec, RunSetup& s, bool with_params) {
  RankCheckpoint r;
  Backend& backend = *s.backend;
  Net& net = *s.net;
  // The staged input (devices the host cannot address) holds the next batch already: the
  // trainer's position is one behind the loader's.
  r.loader_position = s.data->train_loader->position() - (s.staged ? 1 : 0);
  r.rng = net.rng_states();
  r.state = device_floats(backend, net.state(), net.state_count());
  if (with_params) {
    r.params = device_floats(backend, net.params(), net.param_count());
    r.velocity = device_floats(backend, s.sgd->velocity(), net.param_count());
  }
  r.strategy = s.exchange->checkpoint_state();
  r.loss_scale = s.scaler->scale();
  r.loss_scale_good_steps = s.scaler->good_steps();
  r.skipped_steps = s.scaler->skipped_steps();
  r.train_clock = rec.train_clock;
  r.loss = rec.local_loss;
  for (size_t p = 0; p < kPhaseCount; ++p) r.seconds[phase_name(static_cast<Phase>(p))] = rec.seconds[p];
  if (s.exchange->records_compression()) r.series["wire_bytes"] = rec.wire_bytes;
  if (s.shares->active()) {  // heterogeneous workers: /partition's records, the balancer's state
    r.series["share"] = rec.share;
    r.series["compute"] = rec.compute;
    const ShareState shares = s.shares->state();
    for (const ShareChange& c : shares.changes) {
      r.share_changes.push_back(c.step);
      r.share_changes.insert(r.share_changes.end(), c.shares.begin(), c.shares.end());
    }
    r.share_window_seconds = shares.window_seconds;
    r.share_window_samples = shares.window_samples;
  }
  return r;
}

void restore_rank_state(const RankCheckpoint& r, RunSetup& s, int64_t steps_done) {
  Backend& backend = *s.backend;
  Net& net = *s.net;
  TS_CHECK(r.loader_position == s.data->train_loader->position(),
           "checkpoint: the loader position " + std::to_string(r.loader_position) + " was not set up (" +
               std::to_string(s.data->train_loader->position()) + ")");
  put_device_floats(backend, net.state(), r.state, net.state_count(), "the non-trainable state");
  if (!r.params.empty() || !r.velocity.empty()) {
    put_device_floats(backend, net.params(), r.params, net.param_count(), "the parameters");
    put_device_floats(backend, s.sgd->velocity(), r.velocity, net.param_count(), "the momentum");
  }
  try {
    net.set_rng_states(r.rng);
  } catch (const ConfigError& e) {
    throw RuntimeError(std::string("checkpoint: ") + e.what());
  }
  s.exchange->restore_checkpoint_state(r.strategy, steps_done);
  s.scaler->restore(r.loss_scale, r.loss_scale_good_steps, r.skipped_steps);
  backend.synchronize();
}

void restore_recording(const Checkpoint& series, const RankCheckpoint& r, RunRecording& rec) {
  recording_series(rec) = checkpoint_series(series);
  rec.local_loss = r.loss;
  rec.train_clock = r.train_clock;
  const size_t S = rec.step.size();
  TS_CHECK(rec.local_loss.size() == S, "checkpoint: " + std::to_string(rec.local_loss.size()) + " losses for " +
                                           std::to_string(S) + " steps");
  for (size_t p = 0; p < kPhaseCount; ++p) {
    const char* name = phase_name(static_cast<Phase>(p));
    auto it = r.seconds.find(name);
    TS_CHECK(it != r.seconds.end() && it->second.size() == S,
             std::string("checkpoint: the timing phase ") + name + " is missing or of another length");
    rec.seconds[p] = it->second;
  }
  const std::pair<const char*, std::vector<float>*> named[] = {
      {"wire_bytes", &rec.wire_bytes}, {"share", &rec.share}, {"compute", &rec.compute}};
  for (const auto& [name, into] : named) {
    auto it = r.series.find(name);
    if (it == r.series.end()) continue;
    TS_CHECK(it->second.size() == S, std::string("checkpoint: the per-step series ") + name + " is of another length");
    *into = it->second;
  }
}

std::optional<ShareState> share_state_of(const RankCheckpoint& r, int world) {
  if (r.share_changes.empty()) return std::nullopt;
  const size_t row = static_cast<size_t>(world) + 1;
  TS_CHECK(r.share_changes.size() % row == 0, "checkpoint: the share changes hold " + std::to_string(r.share_changes.size()) +
                                                  " values, not rows of a step and " + std::to_string(world) + " shares");
  ShareState state;
  for (auto at = r.share_changes.begin(); at != r.share_changes.end(); at += static_cast<std::ptrdiff_t>(row))
    state.changes.push_back({*at, std::vector<int64_t>(at + 1, at + static_cast<std::ptrdiff_t>(row))});
  state.window_seconds = r.share_window_seconds;
  state.window_samples = r.share_window_samples;
  return state;
}

void pack_rank_state(ByteWriter& out, const RankCheckpoint& r) {
  std::apply([&out](const auto&... field) { (out.put(field), ...); }, plain_fields(r));
  for (const auto* named : {&r.seconds, &r.series}) {
    out.put(static_cast<uint64_t>(named->size()));
    for (const auto& [name, values] : *named) {
      out.put(std::vector<char>(name.begin(), name.end()));
      out.put(values);
    }
  }
}

RankCheckpoint unpack_rank_state(ByteReader& in) {
  RankCheckpoint r;
  std::apply([&in](auto&... field) { (get_into(in, field), ...); }, plain_fields(r));
  for (auto* named : {&r.seconds, &r.series}) {
    const uint64_t count = in.get<uint64_t>();
    for (uint64_t i = 0; i < count; ++i) {
      const std::vector<char> name = in.get_vector<char>();
      (*named)[std::string(name.begin(), name.end())] = in.get_vector<float>();
    }
  }
  return r;
}

void pack_series(ByteWriter& out, const Checkpoint& c) {
  std::apply([&out](const auto&... v) { (out.put(v), ...); }, std::tuple_cat(std::tie(c.step), checkpoint_series(c)));
}

void unpack_series(ByteReader& in, Checkpoint& c) {
  std::apply([&in](auto&... v) { (get_into(in, v), ...); }, std::tuple_cat(std::tie(c.step), checkpoint_series(c)));
}

}  // namespace ts
