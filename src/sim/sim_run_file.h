// The run file of a simulated run: the schema of a measured one (docs/hdf5-schema.md,
// trainscale-run/1) filled from the ranks' records, with the root attribute `simulated` = 1,
// the cluster file and the platform; /timing holds simulated seconds, so the analysis reads it
// as it reads a measured run.
#pragma once

#include <string>

#include "metrics/run_result.h"
#include "sim/sim_rank.h"
#include "sim/simulate_run.h"
#include "sim/workload.h"

namespace ts::sim {

struct SimulatedRun {
  const SimRunRequest* request = nullptr;  // the config, cluster, run id, config id and campaign
  const Workload* workload = nullptr;
  const RankJob* job = nullptr;
  std::string start_time;
  std::string platform;     // Platform::description and the simulator settings
  std::string mpi_flavor;   // the flavor simulated (its collective selector), or "smpi"
  std::string mpi_version;  // "SimGrid 3.32.0 SMPI, coll-selector ompi"
  std::string mpi_tuning;   // the simulator's configuration lines, "key:value; ..."
};

// The run's result (every rank's record gathered); ConfigError/RuntimeError never: callers
// check the ranks' errors first.
RunResult simulated_run_result(const SimulatedRun& run);

}  // namespace ts::sim
