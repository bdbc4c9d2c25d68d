// `trainscale-sim run`'s work, apart from its command line: one run configuration on a simulated
// cluster, from the modelled workload to the run file (docs/model.md "Simulation").
#pragma once

#include <cstdint>
#include <iosfwd>
#include <string>

#include "config/run_config.h"
#include "perfmodel/cluster.h"

namespace ts::sim {

struct SimRunRequest {
  ResolvedConfig cfg;            // `workers` is the number of simulated ranks
  perf::ClusterSpec cluster;
  int64_t steps = 3;             // simulated training steps
  std::string network_model = "CM02";
  std::string coll_selector;     // "" = from the run's mpi_flavor or the cluster file
  int64_t workers_per_node = 0;  // > 0: the run's layout; 0: each node's places filled first
  std::string run_id, config_id, campaign;
  std::string run_path;          // the run file to write
};

// ConfigError for what the simulator cannot run (shm, nccl, fewer than 1 step); RuntimeError when
// a rank fails or the simulation stalls. Logs progress and the result on `log`.
void simulate_run(const SimRunRequest& request, std::ostream& log);

}  // namespace ts::sim
