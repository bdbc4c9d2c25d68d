// The body of one simulated rank (an SMPI actor, docs/model.md "Simulation"): the trainer's
// step protocol over the real exchange strategy (dist/, compiled against SMPI) with the compute
// replaced by modelled time. Per step: the minibatch copy and forward as simulated executions;
// backward as one execution in the background while the rank walks the layers' modelled
// boundaries and hands each layer's gradient range to the strategy as Net::backward does (the
// communication "thread" runs bucket reductions inline, dist/smpi/inline_comm_thread.cpp, so
// they overlap the background backward as the real thread overlaps the real one); then
// finish_step with the update as modelled time. Timings are simulated seconds, per phase as
// train/phases.h names them.
#pragma once

#include <array>
#include <cstdint>
#include <string>
#include <vector>

#include "dist/exchange_strategy.h"
#include "sim/workload.h"
#include "train/phases.h"

namespace ts::sim {

// What one rank recorded.
struct RankRecord {
  std::array<std::vector<float>, kPhaseCount> seconds;  // [phase][step]
  std::vector<double> step_end;  // simulated time at the end of each step, since the first began
  std::string host;
  std::string error;             // what stopped this rank ("" when it finished)
};

// Shared by every rank of one simulation (they are actors of one process): the inputs, read
// only, and one record per rank, each written by its own rank alone.
struct RankJob {
  const Workload* workload = nullptr;
  ExchangeOptions options;
  int64_t steps = 1;
  int64_t average_period = 1;  // weight_avg: average every `period` steps and after the last
  // The arenas: one block of SMPI shared memory for every rank (dist/smpi/simulation.h); their
  // values are meaningless, only the bytes that move are simulated.
  float* params = nullptr;
  float* grads = nullptr;
  float* state = nullptr;
  std::vector<RankRecord> records;  // by rank
  std::string transport;            // the strategy's, written by rank 0
  bool ps_phases = false;           // the strategy times gather / average / broadcast (rank 0)
};

// Runs rank `rank` of `job` (called in the rank's actor; argc/argv are the actor's). Errors are
// caught and recorded in job.records[rank].error; the other ranks then stall and the
// simulation ends there.
void run_rank(RankJob& job, int rank, int argc, char** argv);

}  // namespace ts::sim
