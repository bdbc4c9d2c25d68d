// A run's MLPerf logging stream (the `:::MLLOG {json}` lines MLPerf Training and HPC results are
// made of, which mlperf-logging's compliance checker reads), made from its run file: the
// run's wall times (/train/wall_time, /eval/wall_time and /eval/seconds, the root's
// setup_start_unix and train_start_unix) give each event's time_ms. Written when a run with
// `logging.mllog` ends, and by `trainscale show RUN.h5 --mllog PATH` (docs/interoperability.md).
//
// Events, in time order: submission fields, cache_clear, init_start; the hyperparameters;
// init_stop and run_start at the loop's start; per evaluation a block (block_start .. block_stop,
// with first_epoch_num, epoch_count and samples_count) then eval_start, eval_accuracy
// (epoch_num) and eval_stop; tracked_stats (throughput); run_stop with status success when
// eval.target_accuracy was reached, else aborted.
#pragma once

#include <string>

#include "metrics/run_file_view.h"

namespace ts {

// The stream, one event per line. RuntimeError naming the file when it lacks the wall times
// (written before they existed) or has steps without them (a resumed run: its earlier attempts'
// wall times are not in the checkpoint).
std::string mllog_text(const RunFileView& run);

}  // namespace ts
