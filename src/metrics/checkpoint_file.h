// A run's checkpoint: everything a run holds between two steps, on every rank, so that a new
// process continues it bit for bit (docs/hdf5-schema.md "Checkpoint files", schema
// trainscale-checkpoint/2). Written atomically (core/file_io.h), datasets checksummed
// (Fletcher-32) and the parameters' SHA-256 recorded, so a reader refuses a damaged file
// instead of resuming from it. The train module fills and applies it (train/checkpoint.h).
// Where the ranks' models differ (weight_avg, ranks of different backends), each rank's
// parameters and momentum go to a model part file of their own beside the checkpoint, written
// first, one rank at a time, so that rank 0 never holds every rank's model; the checkpoint file,
// written last, records each part's SHA-256 and is the commit point.
#pragma once

#include <cstdint>
#include <map>
#include <string>
#include <vector>

namespace ts {

inline constexpr const char* kCheckpointSchema = "trainscale-checkpoint/2";
inline constexpr const char* kModelPartSchema = "trainscale-checkpoint-model/1";

// What one rank holds beyond what all ranks share.
struct RankCheckpoint {
  int64_t loader_position = 0;        // the next training batch (sequence number) of its loader
  std::vector<uint64_t> rng;          // the net's random streams (dropout), Net::rng_states()
  std::vector<float> state;           // non-trainable state: BN running statistics (per worker)
  std::vector<float> params;          // only when the replicas differ (weight_avg): its model
  std::vector<float> velocity;        // part's (read_model_part), else empty; the momentum likewise
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
  bool params_per_rank = false;       // each rank's params/velocity live in its model part file
  std::vector<float> params, velocity;  // shared by every rank when !params_per_rank
  std::vector<std::string> rank_params_sha256;  // params_per_rank: each rank's part's parameters [world_size]
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
// per-rank arrays disagree in length (nothing is written then). With params_per_rank the ranks'
// models are not in `ckpt` (their params/velocity are empty): their parts are written first
// (write_model_part) and `rank_params_sha256` holds what those returned.
void write_checkpoint_file(const std::string& path, const Checkpoint& ckpt);

// Reads and verifies a checkpoint file: RuntimeError naming the file and what is wrong for a
// missing, truncated or damaged file (HDF5 checksums, shapes, the parameters' SHA-256) or one of
// another schema. With params_per_rank the ranks' models stay in their parts (read_model_part).
Checkpoint read_checkpoint_file(const std::string& path);

// The model part of rank `rank` beside the checkpoint at `checkpoint_path`:
// "<run_id>.checkpoint.<step>.model-<rank>.hdf5".
std::string model_part_path(const std::string& checkpoint_path, int64_t rank);

// Writes rank `rank`'s parameters and momentum to its model part of the checkpoint `header`
// (run_id, step) at `checkpoint_path`, atomically; returns the parameters' SHA-256.
std::string write_model_part(const std::string& checkpoint_path, const Checkpoint& header, int64_t rank,
                             const std::vector<float>& params, const std::vector<float>& velocity);

// Reads rank `rank`'s model part of the per-rank checkpoint `ckpt` (read_checkpoint_file's) into
// `into`'s params and velocity; RuntimeError naming the part when it is missing, damaged, of
// another checkpoint, or its parameters do not match the SHA-256 the checkpoint recorded.
void read_model_part(const Checkpoint& ckpt, int64_t rank, RankCheckpoint& into);

}  // namespace ts
