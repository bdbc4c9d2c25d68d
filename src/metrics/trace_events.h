// A run's per-rank phases as a Chrome trace (the Trace Event Format's JSON object form, which
// Perfetto and chrome://tracing open): `trainscale trace RUN.h5 -o trace.json`.
//
// The run file holds each phase's seconds per step and rank (/timing [S, R]), not when each
// began, so the trace places them: a step ends where rank 0's wall clock ended it
// (/train/wall_time; files without it, and resumed runs: a step starts where rank 0's training
// clock, /train/time, ended the step before); on each rank's "training" thread come data_wait, forward, backward,
// then comm_wait and optimizer at the end of the step (the gap before them, if any, is
// "step_other": the exchange's own work on that thread). The "communication" thread holds comm
// (and its parts compress and decompress, the parameter-server phases gather, average and
// broadcast), placed to end where comm_wait ends: the moment the training thread stopped
// waiting for it. Every event's duration is the file's value exactly; only its start is
// placed. One process per rank (pid = rank, named "rank R (host)"); on the wall clock, rank 0's
// evaluations and checkpoints as spans of their recorded seconds (/eval, /checkpoints), on the
// training clock (which excludes them) evaluations as instant events. Each bucket's exchange
// (/bucket_timing, in the recorded steps) is an event "bucket B" on the rank's "buckets" thread,
// at its recorded start from the rank's step start: measured, not placed.
#pragma once

#include <string>

#include "metrics/run_file_view.h"

namespace ts {

std::string chrome_trace_json(const RunFileView& run);
// What the trace holds of the buckets ("2 bucket(s) ... in 12 recorded step(s)"), or that the
// file did not record them (the trace's otherData.buckets; `trainscale trace` prints it).
std::string buckets_note(const RunFileView& run);

}  // namespace ts
