// Writing a run's checkpoints (see checkpoint.h).
#include "train/checkpoint.h"

#include <algorithm>
#include <cctype>
#include <filesystem>

#include "core/error.h"
#include "core/sha256.h"
#include "core/strings.h"
#include "core/timer.h"
#include "train/checkpoint_state.h"

namespace ts {
namespace {

namespace fs = std::filesystem;

constexpr const char* kInfix = ".checkpoint.";
constexpr const char* kSuffix = ".hdf5";

// The step of "<run_id>.checkpoint.<digits>.hdf5", or -1 for any other name.
int64_t step_of_name(const std::string& name, const std::string& run_id) {
  const std::string prefix = run_id + kInfix;
  const std::string suffix = kSuffix;
  if (!starts_with(name, prefix) || name.size() <= prefix.size() + suffix.size() ||
      name.compare(name.size() - suffix.size(), suffix.size(), suffix) != 0)
    return -1;
  const std::string digits = name.substr(prefix.size(), name.size() - prefix.size() - suffix.size());
  if (digits.size() > 18 || !std::all_of(digits.begin(), digits.end(), [](char c) { return std::isdigit(static_cast<unsigned char>(c)); }))
    return -1;
  return std::stoll(digits);
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
  c.steps = rec.step;
  c.samples = rec.samples;
  c.epoch = rec.epoch;
  c.time = rec.time;
  c.lr = rec.lr;
  c.eval_step = rec.eval_step;
  c.eval_epoch = rec.eval_epoch;
  c.eval_time = rec.eval_time;
  c.eval_loss = rec.eval_loss;
  c.eval_accuracy = rec.eval_accuracy;
  return c;
}

// Keeps the newest two at or below `step`; removes older ones and any ahead of `step`.
void prune(const CheckpointTarget& target, int64_t step) {
  int kept = 0;
  for (const auto& [other, path] : list_checkpoints(target.out_dir, target.run_id)) {
    if (other <= step && kept < 2) {
      ++kept;
      continue;
    }
    std::error_code ec;
    fs::remove(path, ec);  // best effort: a file that stays is only disk space
  }
}

}  // namespace

std::string checkpoint_path(const std::string& out_dir, const std::string& run_id, int64_t step) {
  return (fs::path(out_dir) / (run_id + kInfix + std::to_string(step) + kSuffix)).string();
}

std::vector<std::pair<int64_t, std::string>> list_checkpoints(const std::string& out_dir, const std::string& run_id) {
  std::vector<std::pair<int64_t, std::string>> found;
  std::error_code ec;
  for (fs::directory_iterator it(out_dir, ec), end; !ec && it != end; it.increment(ec)) {
    const int64_t step = step_of_name(it->path().filename().string(), run_id);
    if (step >= 0) found.emplace_back(step, it->path().string());
  }
  std::sort(found.begin(), found.end(), [](const auto& a, const auto& b) { return a.first > b.first; });
  return found;
}

std::string checkpoint_refusal(const RunConfig& run) {
  // Every rank's backend (ranks.backend), not only this rank's: the ranks must agree.
  const bool cuda = run.backend == BackendKind::cuda ||
                    std::find(run.rank_backends.begin(), run.rank_backends.end(), BackendKind::cuda) != run.rank_backends.end();
  if (cuda)
    return "backend cuda is not checkpointed: a new process may autotune other cuDNN algorithms, so a resumed run "
           "would not be bit-identical to the uninterrupted one (and this path is untested on GPUs); use backend "
           "cpu or ref, or run without checkpoints";
  if (run.dist.strategy == DistStrategy::hogwild)
    return "dist.strategy hogwild is not checkpointed: its replicas race on the shared weights, so no resumed run "
           "could repeat the uninterrupted one; run without checkpoints";
  return "";
}

std::string save_checkpoint(const CheckpointTarget& target, int64_t step, RunRecording& rec, RunSetup& s,
                            Communicator& comm) {
  const double t0 = now_seconds();
  const bool root = comm.rank() == 0;
  // async_ps: the weights and momentum are the servers', taken once every rank is at `step`.
  const bool elsewhere = s.exchange->model_lives_elsewhere();
  const bool per_rank = !s.replicas_identical && !elsewhere;
  RankCheckpoint mine = capture_rank_state(rec, s, per_rank || (root && !elsewhere));
  std::string blob;
  if (!root) {
    ByteWriter out;
    pack_rank_state(out, mine);
    blob = out.take();
  }
  const std::vector<std::string> blobs = comm.gather_blobs_to_root(blob);
  if (elsewhere) s.exchange->capture_model(root ? &mine.params : nullptr, root ? &mine.velocity : nullptr);
  std::string path;
  if (root) {
    Checkpoint c = header_of(target, step, rec, comm.size());
    c.params_per_rank = per_rank;
    c.ranks.push_back(std::move(mine));
    for (size_t r = 1; r < blobs.size(); ++r) {
      ByteReader in(blobs[r]);
      c.ranks.push_back(unpack_rank_state(in));
    }
    if (!per_rank) {
      c.params = std::move(c.ranks.front().params);
      c.velocity = std::move(c.ranks.front().velocity);
      c.ranks.front().params.clear();
      c.ranks.front().velocity.clear();
    }
    const std::vector<float>& params = per_rank ? c.ranks.front().params : c.params;
    c.params_sha256 = sha256_hex_of_floats(params.data(), static_cast<int64_t>(params.size()));
    path = checkpoint_path(target.out_dir, target.run_id, step);
    write_checkpoint_file(path, c);
    prune(target, step);
    rec.last_checkpoint = path;
  }
  ++rec.checkpoints;
  rec.checkpoint_seconds += now_seconds() - t0;
  return path;
}

void remove_checkpoints(const std::string& out_dir, const std::string& run_id) {
  std::error_code ec;
  for (const auto& [step, path] : list_checkpoints(out_dir, run_id)) fs::remove(path, ec);
  // "<checkpoint>.tmp-<pid>": a write that was killed before its rename (core/file_io.h).
  const std::string prefix = run_id + kInfix;
  std::vector<fs::path> leftovers;
  for (fs::directory_iterator it(out_dir, ec), end; !ec && it != end; it.increment(ec)) {
    const std::string name = it->path().filename().string();
    if (starts_with(name, prefix) && name.find(std::string(kSuffix) + ".tmp-") != std::string::npos)
      leftovers.push_back(it->path());
  }
  for (const auto& p : leftovers) fs::remove(p, ec);
}

}  // namespace ts
