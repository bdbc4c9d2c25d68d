// A run's checkpoint: everything a run holds between two steps, on every rank, so that a new
// process continues it bit for bit (docs/hdf5-schema.md "Checkpoint files", schema
// trainscale-checkpoint/2). Written atomically (core/file_io.h), datasets checksummed
// (Fletcher-32) and the parameters' SHA-256 recorded, so a reader refuses a damaged file
// instead of resuming from it. The train module fills and applies it (train/checkpoint.h).
// Where every rank holds arrays of the model's size of its own (its model: weight_avg, ranks of
// different backends; its error-feedback memory: compressed exchanges), they go to a rank part
// file beside the checkpoint, written first, one rank at a time as its state arrives, so that
// rank 0 never holds every rank's; the checkpoint file, written last, records what each part
// must hold (its parameters' SHA-256, its strategy state's length) and is the commit point.
#pragma once

#include <cstdint>
#include <map>
#include <string>
#include <vector>

namespace ts {

inline constexpr const char* kCheckpointSchema = "trainscale-checkpoint/2";
inline constexpr const char* kRankPartSchema = "trainscale-checkpoint-rank/1";

// What one rank holds beyond what all ranks share.
struct RankCheckpoint {
  int64_t loader_position = 0;        // the next training batch (sequence number) of its loader
  std::vector<uint64_t> rng;          // the net's random streams (dropout), Net::rng_states()
  std::vector<float> state;           // non-trainable state: BN running statistics (per worker)
  std::vector<float> params;          // only when the replicas differ (weight_avg): its model
  std::vector<float> velocity;        // part's (read_rank_part), else empty; the momentum likewise
  std::vector<float> strategy;        // the exchange strategy's own state (weight_avg: non-finite count)
  double loss_scale = 1;              // the loss scaler: scale, good steps in a row, skipped steps
  int64_t loss_scale_good_steps = 0;
  int64_t skipped_steps = 0;
  double train_clock = 0;             // its training time so far (evaluation excluded)
  std::vector<float> loss;            // [S] its own loss per step
  std::map<std::string, std::vector<float>> seconds;  // phase -> [S] its seconds per step
  std::map<std::string, std::vector<float>> series;   // other per-step records -> [S] (compressed
                                                      // runs: wire_bytes; unequal shares: share, compute)
  // Heterogeneous workers: every change of the ranks' shares so far, each [first step, share of
  // rank 0, ..., share of rank R-1] in a row (empty with equal shares), and this rank's
  // measurement window since the last decision (measured / adaptive).
  std::vector<int64_t> share_changes;
  double share_window_seconds = 0;
  int64_t share_window_samples = 0;
};

struct Checkpoint {
  std::string run_id, config_id;
  int64_t step = 0;                   // steps finished
  int64_t world_size = 1;
  int64_t attempt = 1;                // the attempt that wrote it
  std::string written;                // ISO 8601 (UTC)
  std::string params_sha256;          // of `params` (or rank 0's), core/sha256.h byte order
  bool params_per_rank = false;       // every rank has its own params/velocity (in its rank part)
  std::vector<float> params, velocity;  // shared by every rank when !params_per_rank
  // Rank parts (always with params_per_rank): each rank's model and strategy state are in its
  // part, not in `ranks`; what each part must hold: its parameters' SHA-256 (params_per_rank)
  // and its strategy state's length, [world_size] each.
  bool rank_parts = false;
  std::vector<std::string> rank_params_sha256;
  std::vector<int64_t> rank_strategy_sizes;
  std::string path;                   // read_checkpoint_file: the file read (its parts lie beside it)
  // Rank 0's series so far (/train, /eval of the run file): [S] and [E].
  std::vector<int64_t> steps, samples;
  std::vector<double> epoch, time;
  std::vector<float> lr;
  std::vector<int64_t> eval_step;
  std::vector<double> eval_epoch, eval_time, eval_loss, eval_accuracy;
  std::vector<RankCheckpoint> ranks;  // [world_size]
};

// Writes `ckpt` to `path` atomically. RuntimeError (naming the file) on failure, or when the
// per-rank arrays disagree in length (nothing is written then). With rank_parts the ranks'
// models and strategy states are not in `ckpt` (empty): their parts were written first
// (write_rank_part), and `rank_params_sha256` / `rank_strategy_sizes` say what they hold.
void write_checkpoint_file(const std::string& path, const Checkpoint& ckpt);

// Reads and verifies a checkpoint file: RuntimeError naming the file and what is wrong for a
// missing, truncated or damaged file (HDF5 checksums, shapes, the parameters' SHA-256) or one of
// another schema. With rank_parts the ranks' models and strategy states stay in their parts
// (read_rank_part).
Checkpoint read_checkpoint_file(const std::string& path);

// The rank part of rank `rank` beside the checkpoint at `checkpoint_path`:
// "<run_id>.checkpoint.<step>.rank-<rank>.hdf5".
std::string rank_part_path(const std::string& checkpoint_path, int64_t rank);

// Writes `state`'s parameters and momentum (with header.params_per_rank) and strategy state to
// rank `rank`'s part of the checkpoint `header` (run_id, step) at `checkpoint_path`,
// atomically; returns the parameters' SHA-256 (of none without params_per_rank).
std::string write_rank_part(const std::string& checkpoint_path, const Checkpoint& header, int64_t rank,
                            const RankCheckpoint& state);

// Reads rank `rank`'s part of `ckpt` (read_checkpoint_file's, with rank_parts) into `into`'s
// params and velocity (params_per_rank) and strategy; RuntimeError naming the part when it is
// missing, damaged, of another checkpoint, or not what the checkpoint recorded (the parameters'
// SHA-256, the strategy state's length).
void read_rank_part(const Checkpoint& ckpt, int64_t rank, RankCheckpoint& into);

}  // namespace ts
