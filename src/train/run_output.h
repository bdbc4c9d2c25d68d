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
// result.record.hosts; elsewhere an empty result. `compression`: also /compression/wire_bytes.
// `partition` (unequal shares, train/share_balancer.h): also every rank's shares and compute
// seconds, the idle seconds derived from them, and /train/loss as the share-weighted mean over ranks.
RunResult gather_recording(const RunRecording& rec, bool ps_phases, bool compression, Communicator& comm,
                           bool partition = false);
// Collective in runs with a /partition group (heterogeneous workers, no-op otherwise): each
// rank's backend, threads and device name into result.partition on rank 0.
void gather_rank_kinds(const RunSetup& setup, const RunConfig& run, Communicator& comm, RunResult& result);
// Collective over the workers with dist.strategy async_ps (no-op otherwise): every worker's
// AsyncPsRecord (dist/async_ps_worker.h) into result.async_ps on rank 0.
void gather_async_ps_record(const ExchangeStrategy& exchange, const DistConfig& dist, Communicator& comm,
                            RunResult& result);

// Rank 0: summary (with the final parameters' SHA-256), root attributes (id.attempt, and
// `resumed_from_step`: the checkpoint's step a resumed run continued from, else 0), /config,
// /model, then the file (atomically).
void write_run_output(RunResult& result, const RunRecording& rec, const ResolvedConfig& cfg, const RunIdentity& id,
                      RunSetup& setup, const std::string& start_time, const std::string& run_path,
                      int64_t resumed_from_step);

}  // namespace ts
