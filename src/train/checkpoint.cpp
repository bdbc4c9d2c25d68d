// Writing a run's checkpoints (see checkpoint.h).
#include "train/checkpoint.h"

#include <algorithm>
#include <cctype>
#include <filesystem>

#include "core/error.h"
#include "core/sha256.h"
#include "core/timer.h"
#include "train/checkpoint_state.h"

namespace ts {
namespace {

namespace fs = std::filesystem;

constexpr const char* kInfix = ".checkpoint.";
// A strategy state of at least this many floats per rank (an error-feedback memory) goes to the
// rank parts with the models: smaller ones (weight_avg's one count) stay in the checkpoint file.
constexpr int64_t kRankPartFloats = 1 << 16;
constexpr const char* kSuffix = ".hdf5";

bool all_digits(const std::string& s) {
  return !s.empty() && s.size() <= 18 &&
         std::all_of(s.begin(), s.end(), [](char c) { return std::isdigit(static_cast<unsigned char>(c)); });
}

// The step of "<run_id>.checkpoint.<digits>.hdf5", or with `part` of a rank part
// "<run_id>.checkpoint.<digits>.rank-<digits>.hdf5" (metrics::rank_part_path); -1 for any other name.
int64_t step_of_name(const std::string& name, const std::string& run_id, bool part) {
  const std::string prefix = run_id + kInfix, suffix = kSuffix, infix = ".rank-";
  if (!name.starts_with(prefix) || !name.ends_with(suffix) || name.size() <= prefix.size() + suffix.size()) return -1;
  const std::string middle = name.substr(prefix.size(), name.size() - prefix.size() - suffix.size());
  const size_t at = middle.find(infix);
  if (part != (at != std::string::npos) || !all_digits(middle.substr(0, at)) ||
      (part && !all_digits(middle.substr(at + infix.size()))))
    return -1;
  return std::stoll(middle.substr(0, at));
}

// (step, path) of this run's checkpoints in `out_dir`, or with `parts` of their rank parts.
std::vector<std::pair<int64_t, std::string>> files_by_step(const std::string& out_dir, const std::string& run_id,
                                                           bool parts) {
  std::vector<std::pair<int64_t, std::string>> found;
  std::error_code ec;
  for (fs::directory_iterator it(out_dir, ec), end; !ec && it != end; it.increment(ec)) {
    const int64_t step = step_of_name(it->path().filename().string(), run_id, parts);
    if (step >= 0) found.emplace_back(step, it->path().string());
  }
  return found;
}

// Rank 0's checkpoint of everything but its own rank state, which the caller moves in.
Checkpoint header_of(const CheckpointTarget& target, int64_t step, const RunRecording& rec, int world) {
  Checkpoint c;
  c.run_id = target.run_id;
  c.config_id = target.config_id;
  c.step = step;
  c.world_size = world;
  c.attempt = target.attempt;
  c.written = utc_timestamp();
  checkpoint_series(c) = recording_series(rec);
  return c;
}

// Keeps the newest two at or below `step`; removes older ones and any ahead of `step`, and
// the rank parts of any step not kept (a removed checkpoint's, or parts whose checkpoint file
// was never written).
void prune(const CheckpointTarget& target, int64_t step) {
  std::vector<int64_t> kept;
  std::error_code ec;
  for (const auto& [other, path] : list_checkpoints(target.out_dir, target.run_id)) {
    if (other <= step && kept.size() < 2) {
      kept.push_back(other);
      continue;
    }
    fs::remove(path, ec);  // best effort: a file that stays is only disk space
  }
  for (const auto& [other, path] : files_by_step(target.out_dir, target.run_id, true))
    if (std::find(kept.begin(), kept.end(), other) == kept.end()) fs::remove(path, ec);
}

// The bytes of a checkpoint's file and of the rank parts written beside it.
int64_t checkpoint_files_bytes(const std::string& path, int world) {
  std::error_code ec;
  int64_t bytes = static_cast<int64_t>(std::filesystem::file_size(path, ec));
  for (int rank = 0; rank < world; ++rank) {
    const auto part = std::filesystem::file_size(rank_part_path(path, rank), ec);
    if (!ec) bytes += static_cast<int64_t>(part);
  }
  return bytes;
}

}  // namespace

std::string checkpoint_path(const std::string& out_dir, const std::string& run_id, int64_t step) {
  return (fs::path(out_dir) / (run_id + kInfix + std::to_string(step) + kSuffix)).string();
}

std::vector<std::pair<int64_t, std::string>> list_checkpoints(const std::string& out_dir, const std::string& run_id) {
  std::vector<std::pair<int64_t, std::string>> found = files_by_step(out_dir, run_id, false);
  std::sort(found.begin(), found.end(), [](const auto& a, const auto& b) { return a.first > b.first; });
  return found;
}

std::string save_checkpoint(const CheckpointTarget& target, int64_t step, RunRecording& rec, RunSetup& s,
                            Communicator& comm) {
  const double t0 = now_seconds(), wall = unix_seconds();
  const bool root = comm.rank() == 0;
  // async_ps: the weights and momentum are the servers', taken once every rank is at `step`.
  const bool elsewhere = s.remote_model != nullptr;
  const bool per_rank = !s.replicas_identical && !elsewhere;
  RankCheckpoint mine = capture_rank_state(rec, s, per_rank || (root && !elsewhere));
  const std::string path = checkpoint_path(target.out_dir, target.run_id, step);
  Checkpoint c;
  if (root) {
    c = header_of(target, step, rec, comm.size());
    c.params_per_rank = per_rank;
    // Every rank's strategy state has one size (an error-feedback memory: the model's).
    c.rank_parts = per_rank || static_cast<int64_t>(mine.strategy.size()) >= kRankPartFloats;
  }
  // Rank 0 takes each rank's state as it arrives. A rank's own model (per_rank) and strategy
  // state go to its rank part at once, so rank 0 holds at most its own and one other rank's.
  auto take = [&](int rank, RankCheckpoint&& state) {
    if (c.rank_parts) {
      const std::string sha = write_rank_part(path, c, rank, state);
      if (per_rank) c.rank_params_sha256.push_back(sha);
      c.rank_strategy_sizes.push_back(static_cast<int64_t>(state.strategy.size()));
      state.params = {};
      state.velocity = {};
      state.strategy = {};
    }
    c.ranks.push_back(std::move(state));
  };
  std::string blob;
  if (!root) {
    ByteWriter out;
    pack_rank_state(out, mine);
    blob = out.take();
  } else {
    if (!per_rank) {  // the one shared copy
      c.params = std::move(mine.params);
      c.velocity = std::move(mine.velocity);
      mine.params = {};
      mine.velocity = {};
    }
    take(0, std::move(mine));
  }
  comm.gather_blobs_to_root(blob, [&take](int rank, std::string&& b) {
    ByteReader in(b);
    take(rank, unpack_rank_state(in));
  });
  if (elsewhere) s.remote_model->capture_model(root ? &c.params : nullptr, root ? &c.velocity : nullptr);
  if (root) {
    c.params_sha256 = per_rank ? c.rank_params_sha256.front()
                               : sha256_hex_of_floats(c.params.data(), static_cast<int64_t>(c.params.size()));
    write_checkpoint_file(path, c);  // the commit point: its parts are written
    prune(target, step);
    rec.last_checkpoint = path;
  }
  rec.checkpoint_step.push_back(step);
  rec.checkpoint_wall.push_back(wall);
  rec.checkpoint_duration.push_back(now_seconds() - t0);
  rec.checkpoint_bytes.push_back(root ? checkpoint_files_bytes(path, comm.size()) : 0);
  return root ? path : std::string();
}

void remove_checkpoints(const std::string& out_dir, const std::string& run_id) {
  std::error_code ec;
  for (const auto& [step, path] : list_checkpoints(out_dir, run_id)) fs::remove(path, ec);
  for (const auto& [step, path] : files_by_step(out_dir, run_id, true)) fs::remove(path, ec);
  // "<checkpoint or part>.tmp-<pid>": a write that was killed before its rename (core/file_io.h).
  const std::string prefix = run_id + kInfix;
  std::vector<fs::path> leftovers;
  for (fs::directory_iterator it(out_dir, ec), end; !ec && it != end; it.increment(ec)) {
    const std::string name = it->path().filename().string();
    if (name.starts_with(prefix) && name.find(std::string(kSuffix) + ".tmp-") != std::string::npos)
      leftovers.push_back(it->path());
  }
  for (const auto& p : leftovers) fs::remove(p, ec);
}

}  // namespace ts
