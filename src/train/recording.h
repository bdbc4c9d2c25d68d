// train-internal: what the timed loop records on this rank, in memory, before rank 0 gathers
// it (train/run_output.h). Per-phase seconds go into one column per Phase, by index.
#pragma once

#include <array>
#include <cstdint>
#include <string>
#include <tuple>
#include <vector>

#include "dist/exchange_strategy.h"
#include "train/phases.h"

namespace ts {

struct RunRecording {
  // Per step [S]: /train/* (loss is this rank's; the file holds the mean over ranks).
  std::vector<int64_t> step, samples;
  std::vector<double> epoch, time;
  std::vector<float> lr, local_loss;
  std::array<std::vector<float>, kPhaseCount> seconds;  // [phase][S], this rank
  // Heterogeneous workers (/partition): this rank's samples and compute seconds per step [S].
  std::vector<float> share, compute;
  // Storage reads of this rank's batches (/io/read_*), for the steps of this attempt only (a
  // resumed run's earlier steps are not in its checkpoint: the file marks them -1 / NaN).
  std::vector<int64_t> read_bytes;
  std::vector<float> read_seconds;
  std::vector<float> wire_bytes;  // [S] bytes of this rank's gradient contributions (compressed runs)
  // Each bucket's exchange (/bucket_timing) in the recorded steps of this attempt: every
  // bucket_stride-th (bucket_stride_for), their numbers, and per step this rank's spans in
  // seconds from the step's start (a resumed run's earlier steps are not in its checkpoint).
  int64_t bucket_stride = 1;
  std::vector<int64_t> bucket_step;
  std::vector<std::vector<BucketSpan>> bucket_spans;
  // Wall clock (core/timer.h unix_seconds) of this attempt only (a resumed run's earlier steps
  // and evaluations are not in its checkpoint): each step's end, each evaluation's start and
  // its seconds; the set-up's start and the loop's start.
  std::vector<double> step_wall, eval_wall, eval_seconds;
  double setup_start_wall = 0, loop_start_wall = 0;
  // Per evaluation [E].
  std::vector<int64_t> eval_step;
  std::vector<double> eval_epoch, eval_time, eval_loss, eval_accuracy;
  bool diverged = false;
  std::string message;     // why it diverged
  // The warnings rank 0 printed (train/progress.h warn): the run file's `warnings`, one a line.
  std::vector<std::string> warnings;
  double train_clock = 0;  // training time so far, evaluation excluded
  // Checkpoints of this attempt (outside the training clock) and a preemption.
  std::string last_checkpoint;  // rank 0: path of the newest checkpoint written ("" if none)
  // Each checkpoint of this attempt (rank 0's view): after which step, when it began (wall
  // clock), its seconds and the bytes of its files (the checkpoint and its rank parts).
  std::vector<int64_t> checkpoint_step, checkpoint_bytes;
  std::vector<double> checkpoint_wall, checkpoint_duration;
  int preempted_by = 0;         // the signal that stopped the loop early (0: it ran to the end)

  void reserve(int64_t steps);
  int64_t steps() const { return static_cast<int64_t>(step.size()); }
};

// The run's series, /train's [S] and /eval's [E], of a recording or a run result (the same
// names; a checkpoint's: train/checkpoint_state.h checkpoint_series), in one order:
// `recording_series(to) = recording_series(from)` copies them.
template <typename Series>
auto recording_series(Series& s) {
  return std::tie(s.step, s.samples, s.epoch, s.time, s.lr, s.eval_step, s.eval_epoch, s.eval_time, s.eval_loss,
                  s.eval_accuracy);
}

// The bound on /bucket_timing: at most this many spans in a run file, all ranks together.
inline constexpr int64_t kMaxBucketSpans = int64_t{1} << 20;
// Every how many steps a run of `steps` steps, `buckets` buckets and `world` ranks records its
// buckets' spans (steps 1, 1 + stride, ...) to stay within kMaxBucketSpans: 1 for most runs.
int64_t bucket_stride_for(int64_t steps, int64_t buckets, int64_t world);

}  // namespace ts
