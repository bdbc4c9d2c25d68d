// train-internal: the "loop" phase of a run: train_step after train_step, each step's timings
// recorded by phase on this rank (no extra synchronisation), evaluations every eval_period
// steps and at the end (excluded from the training clock), progress lines on rank 0, and a
// stop on the first non-finite loss any rank sees.
#pragma once

#include <iosfwd>

#include "config/run_config.h"
#include "dist/communicator.h"
#include "train/recording.h"
#include "train/run_setup.h"

namespace ts {

RunRecording run_loop(const RunConfig& run, RunSetup& setup, Communicator& comm, std::ostream& log);

}  // namespace ts
