// Resuming from a checkpoint (see resume.h).
#include "train/resume.h"

#include <filesystem>
#include <ostream>

#include "core/byte_stream.h"
#include "core/error.h"
#include "train/checkpoint_state.h"

namespace ts {

std::optional<Checkpoint> newest_valid_checkpoint(const CheckpointTarget& target, int world, std::ostream& log) {
  for (const auto& [step, path] : list_checkpoints(target.out_dir, target.run_id)) {
    Checkpoint c;
    try {
      c = read_checkpoint_file(path);
    } catch (const RuntimeError& e) {
      log << "note: skipping checkpoint " << path << ": " << e.what() << "; trying an older one\n";
      continue;
    }
    if (c.config_id != target.config_id || c.run_id != target.run_id)
      throw ConfigError("checkpoint " + path + " belongs to run " + c.run_id + " (config_id " + c.config_id +
                        "), not to this run " + target.run_id + " (config_id " + target.config_id +
                        "); a checkpoint of another config is never resumed from: move it away");
    if (c.world_size != world)
      throw ConfigError("checkpoint " + path + " was written by " + std::to_string(c.world_size) +
                        " rank(s), this run has " + std::to_string(world) + "; resume it with as many ranks");
    if (c.step != step) {
      log << "note: skipping checkpoint " << path << ": it holds step " << c.step << ", its name says " << step << "\n";
      continue;
    }
    try {  // every rank part reads back and matches its digest (each dropped after its check)
      for (int64_t r = 0; c.rank_parts && r < c.world_size; ++r) {
        RankCheckpoint scratch;
        read_rank_part(c, r, scratch);
      }
    } catch (const RuntimeError& e) {
      log << "note: skipping checkpoint " << path << ": " << e.what() << "; trying an older one\n";
      continue;
    }
    return c;
  }
  return std::nullopt;
}

ResumeState distribute_checkpoint(const std::optional<Checkpoint>& ckpt, Communicator& comm) {
  const bool root = comm.rank() == 0;
  double head[3] = {0, 0, 0};  // resumed, step, params per rank (exact in a double)
  if (root && ckpt) {
    head[0] = 1;
    head[1] = static_cast<double>(ckpt->step);
    head[2] = ckpt->params_per_rank ? 1 : 0;
  }
  comm.broadcast(head, 3, 0);
  ResumeState state;
  state.resumed = head[0] != 0;
  state.step = static_cast<int64_t>(head[1]);
  state.params_per_rank = head[2] != 0;
  if (!state.resumed) return state;
  // One rank's message at a time: with rank parts, rank 0 reads each part as it sends it.
  const std::string mine = comm.scatter_blobs_from_root([&ckpt](int r) {
    RankCheckpoint rank = ckpt->ranks[static_cast<size_t>(r)];
    if (ckpt->rank_parts) read_rank_part(*ckpt, r, rank);
    ByteWriter out;
    pack_series(out, *ckpt);
    pack_rank_state(out, rank);
    return out.take();
  });
  ByteReader in(mine);
  unpack_series(in, state.series);
  state.mine = unpack_rank_state(in);
  TS_CHECK(in.at_end() && state.series.step == state.step, "checkpoint: rank " + std::to_string(comm.rank()) +
                                                               " received a state that does not fit step " +
                                                               std::to_string(state.step));
  return state;
}

namespace {

// Rank 0's shared `values` (parameters or momentum) to every rank's device memory at `dst`.
void broadcast_into(std::vector<float> values, int64_t count, float* dst, Backend& backend, Communicator& comm,
                    const char* what) {
  const bool root = comm.rank() == 0;
  double fits = !root || static_cast<int64_t>(values.size()) == count ? 1 : 0;
  comm.broadcast(&fits, 1, 0);
  TS_CHECK(fits == 1, std::string("checkpoint: ") + what + " do not fit this model's " + std::to_string(count) +
                          " parameters (a checkpoint of another model?)");
  values.resize(static_cast<size_t>(count));
  comm.broadcast(values.data(), count, 0);
  if (count > 0) backend.copy_from_host(dst, values.data(), values.size() * sizeof(float));
  backend.synchronize();  // `values` goes away with this function
}

}  // namespace

void apply_checkpoint(const ResumeState& state, const std::optional<Checkpoint>& ckpt, RunSetup& s,
                      RunRecording& rec, Communicator& comm) {
  if (!state.resumed) return;
  const int64_t n = s.net->param_count();
  if (!state.params_per_rank) {
    const bool root = comm.rank() == 0;
    broadcast_into(root ? ckpt->params : std::vector<float>{}, n, s.net->params(), *s.backend, comm, "the parameters");
    broadcast_into(root ? ckpt->velocity : std::vector<float>{}, n, s.sgd->velocity(), *s.backend, comm,
                   "the momentum values");
  }
  restore_rank_state(state.mine, s, state.step);
  if (s.remote_model) {  // async_ps: back to the servers (host arenas)
    TS_CHECK(!state.params_per_rank, "checkpoint: per-rank parameters for a strategy that keeps one copy elsewhere");
    s.remote_model->restore_model(s.net->params(), s.sgd->velocity(), state.step);
  }
  restore_recording(state.series, state.mine, rec);
}

}  // namespace ts
