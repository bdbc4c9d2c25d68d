// Checkpoint files (see checkpoint_file.h; layout in docs/hdf5-schema.md "Checkpoint files").
#include "metrics/checkpoint_file.h"

#include <cstdio>
#include <functional>

#include "core/error.h"
#include "core/sha256.h"
#include "metrics/hdf5_file.h"
#include "metrics/hdf5_reader.h"

namespace ts {
namespace {

// Checkpoints are written fast (no deflate) and checksummed (HDF5 refuses a damaged chunk).
constexpr h5::DatasetOptions kCheckpointOptions{false, true};

[[noreturn]] void damaged(const std::string& path, const std::string& what) {
  throw RuntimeError("checkpoint " + path + ": " + what);
}

// Every rank's vector `field` of equal length K, stacked into the [R, K] dataset `name` of `group`;
// `what` names them in the message when their lengths differ.
template <typename T>
void write_stacked(h5::Group& group, const char* name, const std::vector<RankCheckpoint>& ranks,
                   std::vector<T> RankCheckpoint::*field, const std::string& path, const char* what) {
  const int64_t width = static_cast<int64_t>((ranks.front().*field).size());
  std::vector<T> out;
  out.reserve(ranks.size() * static_cast<size_t>(width));
  for (const RankCheckpoint& r : ranks) {
    const std::vector<T>& v = r.*field;
    if (static_cast<int64_t>(v.size()) != width)
      damaged(path, std::string("not written: the ranks' ") + what + " differ in length (" + std::to_string(v.size()) +
                        " vs " + std::to_string(width) + ")");
    out.insert(out.end(), v.begin(), v.end());
  }
  group.write(name, {static_cast<int64_t>(ranks.size()), width}, out.data());
}

// Every rank's scalar `field` as the [R] dataset `name` of `group`.
template <typename T>
void write_column(h5::Group& group, const char* name, const std::vector<RankCheckpoint>& ranks, T RankCheckpoint::*field) {
  std::vector<T> out;
  for (const RankCheckpoint& r : ranks) out.push_back(r.*field);
  group.write(name, out);
}

// A SHA-256 hex digest as four 64-bit words (16 hex digits each, in order) and back: the
// per-rank digests are one [R, 4] dataset.
constexpr size_t kDigestWords = 4;

std::vector<uint64_t> digest_words(const std::string& hex, const std::string& path) {
  if (hex.size() != 16 * kDigestWords || hex.find_first_not_of("0123456789abcdef") != std::string::npos)
    damaged(path, "not written: '" + hex + "' is not a SHA-256 hex digest");
  std::vector<uint64_t> words;
  for (size_t w = 0; w < kDigestWords; ++w) words.push_back(std::stoull(hex.substr(16 * w, 16), nullptr, 16));
  return words;
}

std::string digest_hex(const uint64_t* words) {
  std::string hex;
  char part[17];
  for (size_t w = 0; w < kDigestWords; ++w) {
    std::snprintf(part, sizeof part, "%016llx", static_cast<unsigned long long>(words[w]));
    hex += part;
  }
  return hex;
}

void write_root(h5::File& file, const Checkpoint& c) {
  file.set_attrs({{"run_id", c.run_id}, {"config_id", c.config_id}, {"step", c.step}, {"world_size", c.world_size},
                  {"attempt", c.attempt}, {"written", c.written}, {"params_sha256", c.params_sha256},
                  {"params_per_rank", static_cast<int64_t>(c.params_per_rank ? 1 : 0)},
                  {"rank_parts", static_cast<int64_t>(c.rank_parts ? 1 : 0)}});
}

// What each rank part must hold (the parts were written first): the parameters' digests
// (params_per_rank) and the strategy states' lengths, as /ranks/params_sha256 and strategy_size.
void write_rank_part_index(h5::Group& ranks, const Checkpoint& c, const std::string& path) {
  const int64_t R = static_cast<int64_t>(c.ranks.size());
  const size_t digests = c.params_per_rank ? c.ranks.size() : 0;
  if (c.rank_params_sha256.size() != digests || c.rank_strategy_sizes.size() != c.ranks.size())
    damaged(path, "not written: " + std::to_string(c.rank_params_sha256.size()) + " rank part digests and " +
                      std::to_string(c.rank_strategy_sizes.size()) + " strategy sizes for " + std::to_string(R) + " ranks");
  std::vector<uint64_t> words;
  for (size_t r = 0; r < c.ranks.size(); ++r) {
    const RankCheckpoint& rank = c.ranks[r];
    if (!rank.params.empty() || !rank.velocity.empty() || !rank.strategy.empty())
      damaged(path, "not written: rank " + std::to_string(r) + "'s model and strategy state belong in its rank part");
    if (digests == 0) continue;
    const std::vector<uint64_t> w = digest_words(c.rank_params_sha256[r], path);
    words.insert(words.end(), w.begin(), w.end());
  }
  if (digests > 0) ranks.write("params_sha256", {R, static_cast<int64_t>(kDigestWords)}, words.data());
  ranks.write("strategy_size", c.rank_strategy_sizes);
}

void write_model_and_ranks(h5::File& file, const Checkpoint& c, const std::string& path) {
  if (c.params_per_rank && !c.rank_parts) damaged(path, "not written: per-rank models need rank parts");
  if (!c.params_per_rank) {
    h5::Group model = file.create_group("model");
    model.write_series({{"params", c.params}, {"velocity", c.velocity}});
  }
  h5::Group ranks = file.create_group("ranks");
  if (c.rank_parts) write_rank_part_index(ranks, c, path);
  else write_stacked(ranks, "strategy", c.ranks, &RankCheckpoint::strategy, path, "strategy states");
  write_column(ranks, "loader_position", c.ranks, &RankCheckpoint::loader_position);
  write_stacked(ranks, "rng", c.ranks, &RankCheckpoint::rng, path, "RNG states");
  write_stacked(ranks, "state", c.ranks, &RankCheckpoint::state, path, "states");
  write_column(ranks, "loss_scale", c.ranks, &RankCheckpoint::loss_scale);
  write_column(ranks, "loss_scale_good_steps", c.ranks, &RankCheckpoint::loss_scale_good_steps);
  write_column(ranks, "skipped_steps", c.ranks, &RankCheckpoint::skipped_steps);
  write_column(ranks, "train_clock", c.ranks, &RankCheckpoint::train_clock);
  if (!c.ranks.front().share_changes.empty()) {  // heterogeneous workers
    write_stacked(ranks, "share_changes", c.ranks, &RankCheckpoint::share_changes, path, "share changes");
    write_column(ranks, "share_window_seconds", c.ranks, &RankCheckpoint::share_window_seconds);
    write_column(ranks, "share_window_samples", c.ranks, &RankCheckpoint::share_window_samples);
  }
}

// Each rank's [S] series (`field` of a rank: its loss, or a named series of its map; null when
// it lacks it) as the [S, R] dataset `name` of `group` (the run file's layout), checking every
// rank has S values.
void write_step_major(h5::Group& group, const std::string& name, const Checkpoint& c,
                      const std::function<const std::vector<float>*(const RankCheckpoint&)>& field,
                      const std::string& path) {
  const size_t S = c.steps.size(), R = c.ranks.size();
  std::vector<float> out(S * R);
  for (size_t r = 0; r < R; ++r) {
    const std::vector<float>* v = field(c.ranks[r]);
    if (v == nullptr) damaged(path, "not written: a rank lacks the per-step series " + name);
    if (v->size() != S)
      damaged(path, "not written: rank " + std::to_string(r) + " has " + std::to_string(v->size()) + " " + name +
                        " values for " + std::to_string(S) + " steps");
    for (size_t s = 0; s < S; ++s) out[s * R + r] = (*v)[s];
  }
  group.write(name, {static_cast<int64_t>(S), static_cast<int64_t>(R)}, out.data());
}

// Every rank's named per-step series (`member`: timing phases, other records) as [S, R]
// datasets of `group`.
using RankSeries = std::map<std::string, std::vector<float>> RankCheckpoint::*;
void write_rank_series(h5::Group group, const Checkpoint& c, RankSeries member, const std::string& path) {
  for (const auto& [name, unused] : c.ranks.front().*member)
    write_step_major(group, name, c, [&name = name, member](const RankCheckpoint& r) -> const std::vector<float>* {
      const auto it = (r.*member).find(name);
      return it == (r.*member).end() ? nullptr : &it->second;
    }, path);
}

void write_series(h5::File& file, const Checkpoint& c, const std::string& path) {
  for (size_t n : {c.samples.size(), c.epoch.size(), c.time.size(), c.lr.size()})
    if (n != c.steps.size()) damaged(path, "not written: the /train series differ in length");
  {
    h5::Group train = file.create_group("train");
    train.write_series({{"step", c.steps}, {"samples", c.samples}, {"epoch", c.epoch}, {"time", c.time}, {"lr", c.lr}});
    write_step_major(train, "loss", c, [](const RankCheckpoint& r) { return &r.loss; }, path);
  }
  write_rank_series(file.create_group("timing"), c, &RankCheckpoint::seconds, path);
  if (!c.ranks.front().series.empty()) write_rank_series(file.create_group("series"), c, &RankCheckpoint::series, path);
  h5::Group eval = file.create_group("eval");
  eval.write_series({{"step", c.eval_step}, {"epoch", c.eval_epoch}, {"time", c.eval_time}, {"loss", c.eval_loss},
                     {"accuracy", c.eval_accuracy}});
}

}  // namespace

void write_checkpoint_file(const std::string& path, const Checkpoint& ckpt) {
  if (ckpt.ranks.empty() || static_cast<int64_t>(ckpt.ranks.size()) != ckpt.world_size)
    damaged(path, "not written: " + std::to_string(ckpt.ranks.size()) + " rank states for a world of " +
                      std::to_string(ckpt.world_size));
  h5::write_file(path, kCheckpointSchema, [&](h5::File& file) {
    write_root(file, ckpt);
    write_model_and_ranks(file, ckpt, path);
    write_series(file, ckpt, path);
  }, kCheckpointOptions);
}

namespace {

// The [R, K] dataset `name` (K may be 0) -> each rank's vector `field`.
template <typename T>
void read_stacked(const h5::ReadFile& f, const std::string& name, std::vector<RankCheckpoint>& ranks,
                  std::vector<T> RankCheckpoint::*field) {
  const h5::Array<T> a = f.read<T>(name);
  const int64_t R = static_cast<int64_t>(ranks.size());
  if (a.dims.size() != 2 || a.dims[0] != R) damaged(f.path(), name + " is not a [ranks, n] array of " + std::to_string(R) + " rows");
  const size_t K = static_cast<size_t>(a.dims[1]);
  for (size_t r = 0; r < ranks.size(); ++r) (ranks[r].*field).assign(a.values.begin() + r * K, a.values.begin() + (r + 1) * K);
}

// The [R] dataset `name`: one value per rank.
template <typename T>
std::vector<T> per_rank(const h5::ReadFile& f, const std::string& name, int64_t R) {
  h5::Array<T> a = f.read<T>(name);
  if (a.dims.size() != 1 || a.dims[0] != R) damaged(f.path(), name + " does not hold one value per rank (" + std::to_string(R) + ")");
  return std::move(a.values);
}

// The [R] dataset `name` -> each rank's scalar `field`.
template <typename T>
void read_column(const h5::ReadFile& f, const std::string& name, std::vector<RankCheckpoint>& ranks, T RankCheckpoint::*field) {
  const std::vector<T> values = per_rank<T>(f, name, static_cast<int64_t>(ranks.size()));
  for (size_t r = 0; r < ranks.size(); ++r) ranks[r].*field = values[r];
}

// The [S, R] dataset `name` -> each rank's [S] series (`field` of a rank).
void read_step_major(const h5::ReadFile& f, const std::string& name, size_t S, std::vector<RankCheckpoint>& ranks,
                     const std::function<std::vector<float>&(RankCheckpoint&)>& field) {
  const h5::Array<float> a = f.read<float>(name);
  const size_t R = ranks.size();
  if (a.dims.size() != 2 || a.dims[0] != static_cast<int64_t>(S) || a.dims[1] != static_cast<int64_t>(R))
    damaged(f.path(), name + " is not a [steps, ranks] array of " + std::to_string(S) + " x " + std::to_string(R));
  for (size_t r = 0; r < R; ++r) {
    std::vector<float>& v = field(ranks[r]);
    v.resize(S);
    for (size_t s = 0; s < S; ++s) v[s] = a.values[s * R + r];
  }
}

void read_model(const h5::ReadFile& f, Checkpoint& c) {
  const std::string& path = f.path();
  if (c.params_per_rank) {  // each rank's rank part's digest; the parts are read on their own
    const h5::Array<uint64_t> words = f.read<uint64_t>("/ranks/params_sha256");
    const auto R = static_cast<int64_t>(c.ranks.size());
    if (words.dims.size() != 2 || words.dims[0] != R || words.dims[1] != static_cast<int64_t>(kDigestWords))
      damaged(path, "/ranks/params_sha256 is not a [ranks, 4] array of " + std::to_string(R) + " rows");
    const auto width = static_cast<int64_t>(kDigestWords);
    for (int64_t r = 0; r < R; ++r) c.rank_params_sha256.push_back(digest_hex(words.values.data() + r * width));
    if (c.rank_params_sha256.front() != c.params_sha256)
      damaged(path, "rank 0's rank part digest " + c.rank_params_sha256.front() + " is not the file's params_sha256 " +
                        c.params_sha256 + " (damaged)");
    return;
  }
  f.read_series("/model", {{"params", c.params}, {"velocity", c.velocity}});
  if (c.velocity.size() != c.params.size()) damaged(path, "/model/velocity and /model/params differ in length");
  const std::string sha = sha256_hex_of_floats(c.params.data(), static_cast<int64_t>(c.params.size()));
  if (sha != c.params_sha256)
    damaged(path, "the parameters' SHA-256 is " + sha + ", the file says " + c.params_sha256 + " (damaged)");
}

void read_ranks(const h5::ReadFile& f, Checkpoint& c) {
  read_column(f, "/ranks/loader_position", c.ranks, &RankCheckpoint::loader_position);
  read_column(f, "/ranks/loss_scale", c.ranks, &RankCheckpoint::loss_scale);
  read_column(f, "/ranks/loss_scale_good_steps", c.ranks, &RankCheckpoint::loss_scale_good_steps);
  read_column(f, "/ranks/skipped_steps", c.ranks, &RankCheckpoint::skipped_steps);
  read_column(f, "/ranks/train_clock", c.ranks, &RankCheckpoint::train_clock);
  read_stacked(f, "/ranks/rng", c.ranks, &RankCheckpoint::rng);
  read_stacked(f, "/ranks/state", c.ranks, &RankCheckpoint::state);
  if (c.rank_parts)  // the states are in the rank parts
    c.rank_strategy_sizes = per_rank<int64_t>(f, "/ranks/strategy_size", c.world_size);
  else
    read_stacked(f, "/ranks/strategy", c.ranks, &RankCheckpoint::strategy);
  if (!f.exists("/ranks/share_changes")) return;  // equal shares
  read_stacked(f, "/ranks/share_changes", c.ranks, &RankCheckpoint::share_changes);
  read_column(f, "/ranks/share_window_seconds", c.ranks, &RankCheckpoint::share_window_seconds);
  read_column(f, "/ranks/share_window_samples", c.ranks, &RankCheckpoint::share_window_samples);
}

void read_series(const h5::ReadFile& f, Checkpoint& c) {
  const std::string& path = f.path();
  f.read_series("/train",
                {{"step", c.steps}, {"samples", c.samples}, {"epoch", c.epoch}, {"time", c.time}, {"lr", c.lr}});
  const size_t S = c.steps.size();
  for (size_t n : {c.samples.size(), c.epoch.size(), c.time.size(), c.lr.size()})
    if (n != S) damaged(path, "the /train series differ in length");
  if (S != static_cast<size_t>(c.step)) damaged(path, "/train/step holds " + std::to_string(S) + " steps, the file says " + std::to_string(c.step));
  read_step_major(f, "/train/loss", S, c.ranks, [](RankCheckpoint& r) -> auto& { return r.loss; });
  for (const std::string& phase : f.members("/timing"))
    read_step_major(f, "/timing/" + phase, S, c.ranks, [&phase](RankCheckpoint& r) -> auto& { return r.seconds[phase]; });
  if (f.exists("/series"))
    for (const std::string& name : f.members("/series"))
      read_step_major(f, "/series/" + name, S, c.ranks, [&name](RankCheckpoint& r) -> auto& { return r.series[name]; });
  f.read_series("/eval", {{"step", c.eval_step}, {"epoch", c.eval_epoch}, {"time", c.eval_time},
                          {"loss", c.eval_loss}, {"accuracy", c.eval_accuracy}});
  for (size_t n : {c.eval_epoch.size(), c.eval_time.size(), c.eval_loss.size(), c.eval_accuracy.size()})
    if (n != c.eval_step.size()) damaged(path, "the /eval series differ in length");
}

}  // namespace

Checkpoint read_checkpoint_file(const std::string& path) {
  const h5::ReadFile f = h5::ReadFile::open(path);
  const std::string schema = f.string_attr("/", "schema");
  if (schema != kCheckpointSchema)
    damaged(path, "schema '" + schema + "' is not " + kCheckpointSchema + " (a file of another kind or version)");
  Checkpoint c;
  c.run_id = f.string_attr("/", "run_id");
  c.config_id = f.string_attr("/", "config_id");
  c.step = f.int_attr("/", "step");
  c.world_size = f.int_attr("/", "world_size");
  c.attempt = f.int_attr("/", "attempt");
  c.written = f.string_attr("/", "written");
  c.params_sha256 = f.string_attr("/", "params_sha256");
  c.params_per_rank = f.int_attr("/", "params_per_rank") != 0;
  c.rank_parts = f.int_attr("/", "rank_parts") != 0;
  if (c.params_per_rank && !c.rank_parts) damaged(path, "per-rank parameters without rank parts");
  if (c.world_size < 1 || c.world_size > (1 << 20) || c.step < 0)
    damaged(path, "world_size " + std::to_string(c.world_size) + " / step " + std::to_string(c.step) + " out of range");
  c.ranks.resize(static_cast<size_t>(c.world_size));
  c.path = path;
  read_ranks(f, c);
  read_model(f, c);
  read_series(f, c);
  return c;
}

std::string rank_part_path(const std::string& checkpoint_path, int64_t rank) {
  const std::string suffix = ".hdf5";
  const bool has_suffix = checkpoint_path.size() > suffix.size() && checkpoint_path.ends_with(suffix);
  const std::string stem = has_suffix ? checkpoint_path.substr(0, checkpoint_path.size() - suffix.size()) : checkpoint_path;
  return stem + ".rank-" + std::to_string(rank) + suffix;
}

std::string write_rank_part(const std::string& checkpoint_path, const Checkpoint& header, int64_t rank,
                            const RankCheckpoint& state) {
  const std::string path = rank_part_path(checkpoint_path, rank);
  const bool model = header.params_per_rank;
  if (model && state.params.size() != state.velocity.size())
    damaged(path, "not written: " + std::to_string(state.params.size()) + " parameters but " +
                      std::to_string(state.velocity.size()) + " momentum values");
  const std::vector<float> none;
  const std::vector<float>& params = model ? state.params : none;
  const std::string sha = sha256_hex_of_floats(params.data(), static_cast<int64_t>(params.size()));
  h5::write_file(path, kRankPartSchema, [&](h5::File& file) {
    file.set_attrs({{"run_id", header.run_id}, {"step", header.step}, {"rank", rank}, {"params_sha256", sha}});
    file.write_series({{"params", params}, {"velocity", model ? state.velocity : none}, {"strategy", state.strategy}});
  }, kCheckpointOptions);
  return sha;
}

void read_rank_part(const Checkpoint& ckpt, int64_t rank, RankCheckpoint& into) {
  const std::string path = rank_part_path(ckpt.path, rank);
  if (!ckpt.rank_parts || rank < 0 || rank >= static_cast<int64_t>(ckpt.rank_strategy_sizes.size()))
    damaged(path, "rank " + std::to_string(rank) + " has no rank part in this checkpoint");
  const h5::ReadFile f = h5::ReadFile::open(path);
  const std::string schema = f.string_attr("/", "schema");
  if (schema != kRankPartSchema)
    damaged(path, "schema '" + schema + "' is not " + kRankPartSchema + " (a file of another kind or version)");
  if (f.string_attr("/", "run_id") != ckpt.run_id || f.int_attr("/", "step") != ckpt.step ||
      f.int_attr("/", "rank") != rank)
    damaged(path, "it is the rank part of " + f.string_attr("/", "run_id") + " step " +
                      std::to_string(f.int_attr("/", "step")) + " rank " + std::to_string(f.int_attr("/", "rank")) +
                      ", not of " + ckpt.run_id + " step " + std::to_string(ckpt.step) + " rank " + std::to_string(rank));
  into.strategy = f.read<float>("/strategy").values;
  const int64_t expected = ckpt.rank_strategy_sizes[static_cast<size_t>(rank)];
  if (static_cast<int64_t>(into.strategy.size()) != expected)
    damaged(path, "its strategy state holds " + std::to_string(into.strategy.size()) + " values, the checkpoint says " +
                      std::to_string(expected));
  if (!ckpt.params_per_rank) return;
  into.params = f.read<float>("/params").values;
  into.velocity = f.read<float>("/velocity").values;
  if (into.velocity.size() != into.params.size()) damaged(path, "/velocity and /params differ in length");
  const std::string sha = sha256_hex_of_floats(into.params.data(), static_cast<int64_t>(into.params.size()));
  const std::string& recorded = ckpt.rank_params_sha256[static_cast<size_t>(rank)];
  if (sha != recorded)
    damaged(path, "the parameters' SHA-256 is " + sha + ", the checkpoint says " + recorded + " (damaged)");
}

}  // namespace ts
