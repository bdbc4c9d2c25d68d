// train-internal: the "gather" and "write" phases of a run. Every rank hands its recording to
// rank 0 once (timings [S] per phase -> /timing/<phase> [S, R]; losses -> their mean per step;
// host names), and rank 0 computes the summary, fills the run record and writes the run file.
#pragma once

#include <string>

#include "config/run_config.h"
#include "dist/communicator.h"
#include "metrics/run_result.h"
#include "train/recording.h"
#include "train/run_setup.h"
#include "train/trainer.h"

namespace ts {

// Collective. On rank 0: the per-step series and timings of every rank, and the hosts in
// result.record.hosts; elsewhere an empty result. A compressed exchange: also
// /compression/wire_bytes. Unequal shares (train/share_balancer.h): also every rank's shares,
// compute seconds, backend, threads and device, the idle seconds derived from them, and
// /train/loss as the share-weighted mean over ranks. async_ps: every worker's record too.
RunResult gather_recording(const RunRecording& rec, const RunSetup& setup, const RunConfig& run, Communicator& comm);

// Rank 0: summary (with the final parameters' SHA-256), root attributes (id.attempt, and
// `resumed_from_step`: the checkpoint's step a resumed run continued from, else 0), /config,
// /model, then the file (atomically).
void write_run_output(RunResult& result, const RunRecording& rec, const ResolvedConfig& cfg, const RunIdentity& id,
                      RunSetup& setup, const std::string& start_time, const std::string& run_path,
                      int64_t resumed_from_step);

}  // namespace ts
